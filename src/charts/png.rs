//! SVG -> PNG rasterisation with resvg, so charts can be viewed where SVG is inconvenient
//! (chat, issue trackers, image viewers).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use resvg::tiny_skia::{self, Transform};
use resvg::usvg::{self, fontdb};

use super::{write_atomic, ChartError};

/// Pixel density multiplier: 2x keeps text and thin lines crisp on high-DPI screens.
const SCALE: f32 = 2.0;

/// Families tried (in order) for the generic `sans-serif` that plotters emits; fontdb
/// maps `sans-serif` to "Arial" by default, which most Linux boxes do not have.
const SANS_CANDIDATES: &[&str] = &[
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Arial",
    "Helvetica",
    "FreeSans",
];

/// System fonts are scanned once per process: the scan costs far more than a render.
pub(super) fn fonts() -> Arc<fontdb::Database> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            db.load_system_fonts();
            let families: Vec<String> = db
                .faces()
                .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
                .collect();
            // Prefer a known sans face; otherwise any installed face beats rendering no text.
            let pick = SANS_CANDIDATES
                .iter()
                .find(|c| families.iter().any(|f| f == *c))
                .map(|c| c.to_string())
                .or_else(|| families.first().cloned());
            if let Some(family) = pick {
                db.set_sans_serif_family(family.clone());
                // usvg falls back to `serif` when nothing matches, so point it at the same face.
                db.set_serif_family(family);
            }
            Arc::new(db)
        })
        .clone()
}

/// Rasterises `svg_path` into `png_path` at 2x scale; missing fonts only drop the text.
pub fn svg_to_png(svg_path: &Path, png_path: &Path) -> Result<(), ChartError> {
    let data = std::fs::read(svg_path)?;
    let opt = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_data(&data, &opt).map_err(|e| ChartError::Png(e.to_string()))?;
    let size = tree.size().to_int_size();
    let (w, h) = (
        (size.width() as f32 * SCALE).ceil() as u32,
        (size.height() as f32 * SCALE).ceil() as u32,
    );
    let mut pixmap = tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| ChartError::Png(format!("cannot allocate {w}x{h} pixmap")))?;
    // plotters paints its own background, but fill white anyway so transparent gaps stay legible.
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        Transform::from_scale(SCALE, SCALE),
        &mut pixmap.as_mut(),
    );
    let png = pixmap
        .encode_png()
        .map_err(|e| ChartError::Png(e.to_string()))?;
    write_atomic(png_path, &png)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_at_double_scale() {
        let tmp = tempfile::tempdir().unwrap();
        let (svg, png) = (tmp.path().join("a.svg"), tmp.path().join("a.png"));
        let doc = r#"<svg xmlns="http://www.w3.org/2000/svg" width="30" height="20">
            <rect width="30" height="20" fill="red"/><text x="2" y="15">hi</text></svg>"#;
        std::fs::write(&svg, doc).unwrap();
        svg_to_png(&svg, &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
        // IHDR width/height are the big-endian u32s at bytes 16..24.
        assert_eq!(&bytes[16..24], &[0, 0, 0, 60, 0, 0, 0, 40]);
    }

    #[test]
    fn invalid_svg_is_png_error_and_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let (svg, png) = (tmp.path().join("b.svg"), tmp.path().join("b.png"));
        std::fs::write(&svg, "not svg at all").unwrap();
        let err = svg_to_png(&svg, &png).unwrap_err();
        assert!(matches!(err, ChartError::Png(_)), "{err}");
        assert!(!png.exists());
    }
}

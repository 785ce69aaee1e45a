//! Text widths measured with the font the PNGs are drawn in: the sans face `png.rs` gives resvg,
//! read once, its advance widths looked up per character. Layout that must keep labels apart
//! (bar notes, legends, point labels) asks here instead of guessing a width per character.

use std::sync::OnceLock;

use resvg::usvg::fontdb::{Family, Query};
use skrifa::instance::{LocationRef, Size};
use skrifa::{FontRef, MetadataProvider};

use super::png::fonts;

/// plotters' SVG backend writes `font-size` as the style's size divided by this.
const PLOTTERS_EM: f64 = 1.24;

/// Width of one character in em when no font could be read: DejaVu Sans's digit width.
const FALLBACK_EM: f64 = 0.64;

/// The bytes and face index of the sans face, read once; `None` when no font is installed.
fn sans_face() -> Option<&'static (Vec<u8>, u32)> {
    static FACE: OnceLock<Option<(Vec<u8>, u32)>> = OnceLock::new();
    FACE.get_or_init(|| {
        let db = fonts();
        let families = [Family::SansSerif];
        let id = db.query(&Query {
            families: &families,
            ..Query::default()
        })?;
        db.with_face_data(id, |data, index| (data.to_vec(), index))
    })
    .as_ref()
}

/// Width of `text` in em of the sans face (a missing glyph or font counts as a digit's width).
fn width_em(text: &str) -> f64 {
    let measured = sans_face().and_then(|(data, index)| {
        let font = FontRef::from_index(data, *index).ok()?;
        // At 1 px per em, advance widths come out in em.
        let metrics = font.glyph_metrics(Size::new(1.0), LocationRef::default());
        let charmap = font.charmap();
        let advance = |c: char| metrics.advance_width(charmap.map(c)?).map(f64::from);
        Some(
            text.chars()
                .map(|c| advance(c).unwrap_or(FALLBACK_EM))
                .sum::<f64>(),
        )
    });
    measured.unwrap_or(text.chars().count() as f64 * FALLBACK_EM)
}

/// Rendered width in px of `text` drawn with a plotters text style of `size`.
pub(crate) fn text_width_px(text: &str, size: f64) -> f64 {
    width_em(text) * size / PLOTTERS_EM
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_glyphs_measure_wider_than_narrow_ones() {
        assert_eq!(text_width_px("", 15.0), 0.0);
        assert!(text_width_px("100%", 15.0) > text_width_px("iiii", 15.0));
        let one = text_width_px("8", 12.4);
        assert!((text_width_px("888", 12.4) - 3.0 * one).abs() < 1e-9);
        // A digit is a bit over half an em in any usual sans face.
        assert!((0.4..0.8).contains(&(one / 10.0)), "{one}");
    }
}

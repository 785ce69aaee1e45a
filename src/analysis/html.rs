//! REPORT.html: REPORT.md rendered as one self-contained page. It is made from the very markdown
//! REPORT.md holds, so the two cannot say different things; each chart the markdown links is
//! read from the results directory and inlined, so the page needs nothing beside it offline.

use super::AnalysisError;
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};
use std::path::Path;

/// Kept small and inline: a page read offline, printed, or opened from an archive.
const STYLE: &str = "body{font-family:sans-serif;max-width:75em;margin:1em auto;padding:0 1em;\
line-height:1.4}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;\
padding:.2em .4em;vertical-align:top}th{background:#f3f3f3}code{background:#f6f6f6}\
figure{margin:1.5em 0;position:relative;left:50%;transform:translateX(-50%)}\
figure svg{display:block;width:100%;height:auto}figcaption{color:#333;margin-top:.3em}summary{cursor:pointer}\
#verdicts+p+p+table{font-size:.9em}#verdicts+p+p+table td{white-space:nowrap}\
@media print{body{max-width:none}a{color:inherit}figure{left:0;transform:none}figure,tr{break-inside:avoid}}";

/// How much wider than drawn a chart may show, when the window has room: its smallest text is
/// drawn at 8 px, about 10 px shown this way.
const CHART_ZOOM: f64 = 1.25;

/// The page for `markdown`, whose image links are relative to `dir`. A chart the markdown links
/// but the directory lacks is an error: a page missing a picture it names would mislead.
pub fn render(markdown: &str, dir: &Path) -> Result<String, AnalysisError> {
    let mut events: Vec<Event> = Vec::new();
    // The image being read: its link and its alt text so far, which becomes the caption.
    let mut image: Option<(CowStr, String)> = None;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match (event, &mut image) {
            (Event::Start(Tag::Image { dest_url, .. }), _) => {
                image = Some((dest_url, String::new()))
            }
            (Event::End(TagEnd::Image), Some((url, alt))) => {
                let figure = inline_svg(dir, url, alt)?;
                events.push(Event::Html(CowStr::from(figure)));
                image = None;
            }
            (Event::Text(text) | Event::Code(text), Some((_, alt))) => alt.push_str(&text),
            (_, Some(_)) => {}
            (other, None) => events.push(other),
        }
    }
    name_headings(&mut events);
    let mut body = String::new();
    pulldown_cmark::html::push_html(&mut body, events.into_iter());
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <title>ratelab report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    ))
}

/// Gives each heading the id GitHub gives it (lower case, spaces as dashes), so the scoreboard's
/// links to `#<experiment>` work in the page as they do on the markdown.
fn name_headings(events: &mut [Event]) {
    for i in 0..events.len().saturating_sub(1) {
        let slug = match (&events[i], &events[i + 1]) {
            (Event::Start(Tag::Heading { id: None, .. }), Event::Text(text)) => slug(text),
            _ => continue,
        };
        if let Event::Start(Tag::Heading { id, .. }) = &mut events[i] {
            *id = Some(CowStr::from(slug));
        }
    }
}

/// The id GitHub gives a heading of this text, which the report's links name.
pub(super) fn slug(text: &str) -> String {
    (text.trim().to_lowercase().chars())
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `<figure>` holding the SVG at `rel` (relative to `dir`) under `caption` (its name when
/// empty), as wide as the column or up to [`CHART_ZOOM`] times its drawn width.
fn inline_svg(dir: &Path, rel: &str, caption: &str) -> Result<String, AnalysisError> {
    let path = dir.join(rel);
    let svg = std::fs::read_to_string(&path).map_err(|source| AnalysisError::Io {
        path: path.clone(),
        source,
    })?;
    // An XML declaration is not allowed inside an HTML body.
    let svg = match svg.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or(rest, |(_, after)| after),
        None => &svg,
    };
    let id = escape(rel);
    let caption = escape(if caption.is_empty() { rel } else { caption });
    let width = match drawn_width(svg) {
        Some(px) => format!(
            " style=\"width:max(100%, min(100vw - 3em, {:.0}px))\"",
            px * CHART_ZOOM
        ),
        None => String::new(),
    };
    Ok(format!(
        "<figure id=\"{id}\"{width}>\n{}\n<figcaption>{caption}</figcaption>\n</figure>",
        svg.trim()
    ))
}

/// The `width` the `<svg>` element was drawn at, in px.
fn drawn_width(svg: &str) -> Option<f64> {
    let tag = &svg[svg.find("<svg")?..];
    let tag = &tag[..tag.find('>')?];
    let value = tag.split_once(" width=\"")?.1.split_once('"')?.0;
    value.parse().ok()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_become_inline_svgs_and_tables_stay_tables() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("x")).unwrap();
        std::fs::write(
            dir.path().join("x/a.svg"),
            "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><text>A</text></svg>",
        )
        .unwrap();
        let md = "# t\n\n## window-edge\n\n![what `a` shows](x/a.svg)\n\n| a | b |\n|---|---|\n| 1 < 2 | **x** |\n";
        let page = render(md, dir.path()).unwrap();
        assert!(
            page.contains("<h2 id=\"window-edge\">window-edge</h2>"),
            "{page}"
        );
        assert!(page.contains("<figure id=\"x/a.svg\">\n<svg"), "{page}");
        assert!(
            page.contains("<figcaption>what a shows</figcaption>"),
            "{page}"
        );
        assert!(!page.contains("<?xml"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(page.contains("<td>1 &lt; 2</td>"), "{page}");
        let missing = render("![b.svg](x/b.svg)\n", dir.path());
        assert!(
            matches!(missing, Err(AnalysisError::Io { ref path, .. }) if path.ends_with("x/b.svg")),
            "{missing:?}"
        );
    }

    #[test]
    fn a_chart_may_show_wider_than_the_column_but_not_than_the_window() {
        let svg =
            "<svg width=\"1200\" height=\"700\" viewBox=\"0 0 1200 700\"><text>A</text></svg>";
        assert_eq!(drawn_width(svg), Some(1200.0));
        assert_eq!(drawn_width("<svg><rect width=\"5\"/></svg>"), None);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.svg"), svg).unwrap();
        let page = render("![c](c.svg)\n", dir.path()).unwrap();
        assert!(
            page.contains("width:max(100%, min(100vw - 3em, 1500px))"),
            "{page}"
        );
    }
}

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
figure{margin:1em 0}figure svg{max-width:100%;height:auto}summary{cursor:pointer}";

/// The page for `markdown`, whose image links are relative to `dir`. A chart the markdown links
/// but the directory lacks is an error: a page missing a picture it names would mislead.
pub fn render(markdown: &str, dir: &Path) -> Result<String, AnalysisError> {
    let mut events: Vec<Event> = Vec::new();
    let mut in_image = false;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Image { dest_url, .. }) => {
                in_image = true;
                events.push(Event::Html(CowStr::from(inline_svg(dir, &dest_url)?)));
            }
            Event::End(TagEnd::Image) => in_image = false,
            // The alt text is the file name, already said by the figure's caption.
            _ if in_image => {}
            other => events.push(other),
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

fn slug(text: &str) -> String {
    (text.trim().to_lowercase().chars())
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `<figure>` holding the SVG at `rel` (relative to `dir`) with its name as caption.
fn inline_svg(dir: &Path, rel: &str) -> Result<String, AnalysisError> {
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
    let caption = escape(rel);
    Ok(format!(
        "<figure id=\"{caption}\">\n{}\n<figcaption>{caption}</figcaption>\n</figure>",
        svg.trim()
    ))
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
        let md = "# t\n\n## window-edge\n\n![a.svg](x/a.svg)\n\n| a | b |\n|---|---|\n| 1 < 2 | **x** |\n";
        let page = render(md, dir.path()).unwrap();
        assert!(
            page.contains("<h2 id=\"window-edge\">window-edge</h2>"),
            "{page}"
        );
        assert!(page.contains("<figure id=\"x/a.svg\">\n<svg"), "{page}");
        assert!(!page.contains("<?xml"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(page.contains("<td>1 &lt; 2</td>"), "{page}");
        let missing = render("![b.svg](x/b.svg)\n", dir.path());
        assert!(
            matches!(missing, Err(AnalysisError::Io { ref path, .. }) if path.ends_with("x/b.svg")),
            "{missing:?}"
        );
    }
}

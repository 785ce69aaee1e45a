//! The board as a picture (scoreboard.svg and .png): a library per row, a check per column, each
//! cell coloured by what its claims came to, for a README's first screen and SCOREBOARD.html.

use super::{Board, Status};
use std::fmt::Write as _;

pub const SVG: &str = "scoreboard.svg";
pub const PNG: &str = "scoreboard.png";

const NAME_W: usize = 250;
const LIBRARY_W: usize = 270;
const CELL_W: usize = 112;
const ROW_H: usize = 26;
const TOP: usize = 64;

/// Fill and text colour, and the words, of one cell.
fn look(status: Status) -> (&'static str, &'static str, String) {
    match status {
        Status::Holds(n) => ("#2e7d32", "#ffffff", format!("holds ({n})")),
        Status::Misses {
            holding,
            of,
            differs: true,
        } => ("#c62828", "#ffffff", format!("{holding} of {of} hold")),
        Status::Misses { holding, of, .. } => {
            ("#f9a825", "#000000", format!("{holding} of {of} hold"))
        }
        Status::NoClaim => ("#f5f5f5", "#555555", "no claim".into()),
        Status::NotRun(_) => ("#e0e0e0", "#555555", "not run".into()),
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The SVG of `board`, with `title` above it.
pub(super) fn svg(board: &Board, title: &str) -> String {
    let width = NAME_W + LIBRARY_W + CELL_W * board.checks.len() + 20;
    let height = TOP + ROW_H * (board.libraries.len() + 1) + 20;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <rect width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>\n\
         <text x=\"10\" y=\"26\" font-size=\"18\" font-weight=\"bold\">Which library holds its limit?</text>\n\
         <text x=\"10\" y=\"48\" fill=\"#333333\">{}</text>\n",
        escape(title)
    );
    let header_y = TOP + ROW_H - 8;
    let _ = writeln!(
        out,
        "<text x=\"10\" y=\"{header_y}\" font-weight=\"bold\">library adapter</text>"
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{header_y}\" font-weight=\"bold\">version and client</text>",
        NAME_W + 10
    );
    for (i, (c, _)) in board.checks.iter().enumerate() {
        let x = NAME_W + LIBRARY_W + i * CELL_W + CELL_W / 2;
        let _ = writeln!(
            out,
            "<text x=\"{x}\" y=\"{header_y}\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>",
            escape(&c.name)
        );
    }
    for (row, (name, library)) in board.libraries.iter().enumerate() {
        let y = TOP + ROW_H * (row + 1);
        let text_y = y + ROW_H / 2 + 5;
        let _ = writeln!(out, "<text x=\"10\" y=\"{text_y}\">{}</text>", escape(name));
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{text_y}\" fill=\"#333333\">{}</text>",
            NAME_W + 10,
            escape(&shortened(library, 36))
        );
        for (i, (c, ran)) in board.checks.iter().enumerate() {
            let (fill, ink, words) = look(board.status(name, c, ran));
            let x = NAME_W + LIBRARY_W + i * CELL_W;
            let _ = writeln!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"/>\n\
                 <text x=\"{}\" y=\"{text_y}\" fill=\"{ink}\" text-anchor=\"middle\">{}</text>",
                x + 2,
                y + 2,
                CELL_W - 4,
                ROW_H - 4,
                x + CELL_W / 2,
                escape(&words)
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

/// `text` cut to `chars` characters, with an ellipsis when cut.
fn shortened(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

//! The JUnit XML report of a check, as CI systems read it: one `<testsuite>` per check, one
//! `<testcase>` per limiter claim (classname `ratelab.<limiter>`), a `<failure>` for a claim that
//! differs, `<skipped>` for one that could not be decided (a `<failure>` with `--strict`) and for
//! a check that did not run, with why.

use super::{Judged, Ran};
use crate::analysis::claims::Call;
use std::fmt::Write;

/// The report's text.
pub(super) fn render(ran: &[Ran], strict: bool) -> String {
    let all: Vec<&Judged> = ran.iter().flat_map(|r| &r.claims).collect();
    let failures = all.iter().filter(|j| j.fails(strict)).count();
    let skipped = ran.iter().filter(|r| r.skipped.is_some()).count()
        + all
            .iter()
            .filter(|j| !j.fails(strict) && j.call != Call::Holds)
            .count();
    let tests = all.len() + ran.iter().filter(|r| r.skipped.is_some()).count();
    let seconds: f64 = ran.iter().map(|r| r.seconds).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"ratelab check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"{skipped}\" time=\"{seconds:.3}\">"
    );
    for r in ran {
        out.push_str(&suite(r, strict));
    }
    out.push_str("</testsuites>\n");
    out
}

/// One check's suite.
fn suite(r: &Ran, strict: bool) -> String {
    let name = format!("{} ({})", r.check.name, r.check.experiment);
    let failures = r.claims.iter().filter(|j| j.fails(strict)).count();
    let undecided = (r.claims.iter())
        .filter(|j| !j.fails(strict) && j.call != Call::Holds)
        .count();
    let (tests, skipped) = match r.skipped {
        Some(_) => (1, 1),
        None => (r.claims.len(), undecided),
    };
    let mut out = format!(
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"{skipped}\" time=\"{:.3}\">\n",
        escape(&name),
        r.seconds
    );
    let _ = writeln!(
        out,
        "    <properties><property name=\"asserts\" value=\"{}\"/></properties>",
        escape(&r.check.asserts)
    );
    if let Some(why) = &r.skipped {
        let _ = writeln!(
            out,
            "    <testcase classname=\"ratelab.check\" name=\"{}\" time=\"0\"><skipped message=\"{}\"/></testcase>",
            escape(&r.check.name),
            escape(why)
        );
    }
    for j in &r.claims {
        out.push_str(&case(j, strict));
    }
    out.push_str("  </testsuite>\n");
    out
}

/// One claim's test case.
fn case(j: &Judged, strict: bool) -> String {
    let c = &j.claim.claim;
    let open = format!(
        "    <testcase classname=\"ratelab.{}\" name=\"{}\" time=\"0\">",
        escape(&j.claim.limiter),
        escape(&c.id)
    );
    let detail = format!(
        "{}\naccepts: {}\nmeasured: {}",
        c.text,
        crate::analysis::published(c),
        j.measured
    );
    let body = match (j.call, j.fails(strict)) {
        (Call::Holds, _) => String::new(),
        (call, true) => format!(
            "<failure message=\"{}: {}\" type=\"{}\">{}</failure>",
            call.label(),
            escape(&j.measured),
            call.label(),
            escape(&detail)
        ),
        (call, false) => format!(
            "<skipped message=\"{}: {}\"/>",
            call.label(),
            escape(&j.measured)
        ),
    };
    format!("{open}{body}</testcase>\n")
}

/// Text made safe inside an XML attribute or element.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            // XML 1.0 allows no other control character, even escaped.
            c if (c as u32) < 0x20 && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_attributes_and_elements() {
        assert_eq!(
            escape("a<b & \"c\"\n'd'\u{1}"),
            "a&lt;b &amp; &quot;c&quot;&#10;&apos;d&apos; "
        );
    }
}

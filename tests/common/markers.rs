//! The `//~` markers: what a fixture says it must report, and the one
//! comparison of those markers with what was reported (a missing finding
//! and an unmarked finding both fail).
//!
//! - `code(); //~ unowned-release`: a finding of that check starts on this line
//! - `//~^ id` / `//~^^ id`: one / two lines above; `//~v id`: the line below
//! - `//~ id-a, id-b`: two findings on this line
//! - `//~ 17 id`: also asserts the 1-based column
//! - `//~ id "text"`: also asserts that the message contains `text`

use lockaudit::checks::CheckId;

/// One expected finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// 1-based line the finding starts on.
    pub line: usize,
    pub check: String,
    /// 1-based column, when the marker gives one.
    pub column: Option<usize>,
    /// Text the message must contain, when the marker gives one.
    pub text: Option<String>,
}

/// The markers of a file; an unknown check id is an error naming its line.
pub fn parse(text: &str) -> Result<Vec<Marker>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(pos) = line.find("//~") else {
            continue;
        };
        let mut rest = &line[pos + 3..];
        let mut target = i as isize + 1;
        while let Some(r) = rest.strip_prefix('^') {
            target -= 1;
            rest = r;
        }
        while let Some(r) = rest.strip_prefix('v') {
            target += 1;
            rest = r;
        }
        let mut rest = rest.trim();
        let mut column = None;
        if let Some((num, tail)) = rest.split_once(' ') {
            if let Ok(c) = num.parse::<usize>() {
                column = Some(c);
                rest = tail.trim();
            }
        }
        for item in split_items(rest) {
            let item = item.trim();
            let (check, text) = match item.find('"') {
                Some(q) => (
                    item[..q].trim(),
                    Some(item[q + 1..].trim_end().trim_end_matches('"').to_string()),
                ),
                None => (item, None),
            };
            if CheckId::parse(check).is_none() {
                return Err(format!(
                    "line {}: unknown check id `{check}` in marker",
                    i + 1
                ));
            }
            out.push(Marker {
                line: target as usize,
                check: check.to_string(),
                column,
                text,
            });
        }
    }
    Ok(out)
}

/// Splits `a, b "x, y", c` on commas outside quotes.
fn split_items(s: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            ',' if !quoted => items.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        items.push(cur);
    }
    items
}

/// One reported finding, as the comparison needs it.
#[derive(Debug, Clone)]
pub struct Reported {
    pub line: usize,
    pub column: usize,
    pub check: String,
    pub message: String,
    /// How a problem names it (`line:col: severity[check]: message`).
    pub describe: String,
}

impl Reported {
    pub fn of(f: &lockaudit::finding::Finding) -> Reported {
        Reported {
            line: f.span.start.line,
            column: f.span.start.column,
            check: f.check.as_str().to_string(),
            message: f.message.clone(),
            describe: describe(f),
        }
    }
}

/// `line:col: severity[check]: message`.
pub fn describe(f: &lockaudit::finding::Finding) -> String {
    format!(
        "{}:{}: {}[{}]: {}",
        f.span.start.line,
        f.span.start.column,
        f.severity.as_str(),
        f.check.as_str(),
        f.message
    )
}

/// Every marker without its finding and every finding without its marker,
/// each with the source line it points at; empty when they agree.
pub fn compare(text: &str, expected: &[Marker], reported: &[Reported]) -> Vec<String> {
    let source_line = |n: usize| text.lines().nth(n.saturating_sub(1)).unwrap_or("").trim();
    let mut unmatched: Vec<&Reported> = reported.iter().collect();
    let mut problems = Vec::new();
    for e in expected {
        let pos = unmatched.iter().position(|f| {
            f.line == e.line
                && f.check == e.check
                && e.column.is_none_or(|c| f.column == c)
                && e.text
                    .as_ref()
                    .is_none_or(|t| f.message.contains(t.as_str()))
        });
        match pos {
            Some(i) => {
                unmatched.remove(i);
            }
            None => problems.push(format!(
                "  expected but not found: line {}{}: {}{}\n      | {}",
                e.line,
                e.column.map(|c| format!(":{c}")).unwrap_or_default(),
                e.check,
                e.text
                    .as_ref()
                    .map(|t| format!(" \"{t}\""))
                    .unwrap_or_default(),
                source_line(e.line)
            )),
        }
    }
    for f in unmatched {
        problems.push(format!(
            "  found but not marked: {}\n      | {}",
            f.describe,
            source_line(f.line)
        ));
    }
    problems
}

//! The `//~` markers: the findings a fixture says it must report, and the
//! one comparison of those markers with what was reported. `test-pack`,
//! the fixture tests and the project tests all read markers here.
//!
//! - `code(); //~ unowned-release` — a finding of that check starts on this line
//! - `//~^ id` / `//~^^ id` — one / two lines above; `//~v id` — the line below
//! - `//~ id-a, id-b` — two findings on this line
//! - `//~ 17 id` — also the 1-based column
//! - `//~ id "text"` — also that the message contains `text`
//!
//! A finding no marker expects and a marker no finding meets are both a
//! mismatch.

use crate::finding::Finding;
use crate::vocab::CheckId;

/// One `//~` marker: a finding expected at `line` (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    pub line: usize,
    pub check: CheckId,
    pub column: Option<usize>,
    pub text: Option<String>,
}

/// The markers of a fixture, or the first malformed one (its line and why).
pub fn parse(text: &str) -> Result<Vec<Expect>, String> {
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
        if target < 1 {
            return Err(format!("line {}: the marker points above the file", i + 1));
        }
        let mut rest = rest.trim();
        let mut column = None;
        if let Some((num, tail)) = rest.split_once(' ') {
            if let Ok(c) = num.parse::<usize>() {
                column = Some(c);
                rest = tail.trim();
            }
        }
        let items = split_items(rest);
        if items.is_empty() {
            return Err(format!("line {}: `//~` names no check", i + 1));
        }
        for item in items {
            let item = item.trim();
            let (id, text) = match item.find('"') {
                Some(q) => (
                    item[..q].trim(),
                    Some(item[q + 1..].trim_end().trim_end_matches('"').to_string()),
                ),
                None => (item, None),
            };
            let Some(check) = CheckId::parse(id) else {
                return Err(format!(
                    "line {}: unknown check `{id}` in the marker; {}",
                    i + 1,
                    crate::checks::unknown_id_help(id)
                ));
            };
            out.push(Expect {
                line: target as usize,
                check,
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
    items.retain(|i| !i.trim().is_empty());
    items
}

/// What a marker is compared with: a finding, or one read back from a
/// report.
pub trait Found {
    /// 1-based line and column where it starts.
    fn at(&self) -> (usize, usize);
    fn check(&self) -> CheckId;
    fn message(&self) -> &str;
}

impl Found for Finding {
    fn at(&self) -> (usize, usize) {
        (self.span.start.line, self.span.start.column)
    }
    fn check(&self) -> CheckId {
        self.check
    }
    fn message(&self) -> &str {
        &self.message
    }
}

/// What one fixture got wrong: the markers no finding met, and the
/// findings no marker expected.
#[derive(Debug)]
pub struct Mismatch<'f, F> {
    pub missing: Vec<Expect>,
    pub extra: Vec<&'f F>,
}

impl<F> Mismatch<'_, F> {
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty()
    }
}

impl Expect {
    /// Whether `f` is the finding this marker describes.
    pub fn meets<F: Found>(&self, f: &F) -> bool {
        let (line, column) = f.at();
        f.check() == self.check
            && line == self.line
            && self.column.is_none_or(|c| column == c)
            && self
                .text
                .as_ref()
                .is_none_or(|t| f.message().contains(t.as_str()))
    }
}

/// Pairs each marker with a finding it describes; what is left over on
/// either side is the mismatch. Markers that say more (a column, a text)
/// are matched first, so a bare marker does not take the finding a
/// precise one needs.
pub fn compare<'f, F: Found>(expected: &[Expect], found: &'f [F]) -> Mismatch<'f, F> {
    let mut extra: Vec<Option<&F>> = found.iter().map(Some).collect();
    let mut missing = Vec::new();
    let mut order: Vec<&Expect> = expected.iter().collect();
    order.sort_by_key(|e| std::cmp::Reverse(e.column.is_some() as u8 + e.text.is_some() as u8));
    for e in order {
        let hit = extra.iter_mut().find(|f| f.is_some_and(|f| e.meets(f)));
        match hit {
            Some(slot) => *slot = None,
            None => missing.push(e.clone()),
        }
    }
    missing.sort_by_key(|e| (e.line, e.check));
    Mismatch {
        missing,
        extra: extra.into_iter().flatten().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_point_at_lines_and_name_checks() {
        let m = parse("a //~ unowned-release\n//~^ 3 missing-purpose \"no\"\n").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].line, m[0].check), (1, CheckId::UnownedRelease));
        assert_eq!((m[1].line, m[1].column), (1, Some(3)));
        assert_eq!(m[1].text.as_deref(), Some("no"));
        let err = parse("x\ny //~ unowned-relase\n").unwrap_err();
        assert!(
            err.contains("line 2") && err.contains("did you mean `unowned-release`"),
            "{err}"
        );
        assert!(parse("//~^ missing-purpose").is_err());
        assert!(parse("x //~").is_err());
        let two =
            parse("x //~ unowned-release, missing-purpose \"a, b\"\ny //~v ignored-acquire-result")
                .unwrap();
        assert_eq!(two.len(), 3);
        assert_eq!(two[1].text.as_deref(), Some("a, b"));
        assert_eq!(two[2].line, 3);
    }

    struct F(usize, usize, CheckId, &'static str);
    impl Found for F {
        fn at(&self) -> (usize, usize) {
            (self.0, self.1)
        }
        fn check(&self) -> CheckId {
            self.2
        }
        fn message(&self) -> &str {
            self.3
        }
    }

    #[test]
    fn a_precise_marker_takes_its_finding_first_and_leftovers_are_reported() {
        let e = parse("x //~ unowned-release\n//~^ 5 unowned-release\n").unwrap();
        let found = [
            F(1, 5, CheckId::UnownedRelease, "a"),
            F(1, 1, CheckId::UnownedRelease, "b"),
            F(2, 1, CheckId::MissingPurpose, "c"),
        ];
        let m = compare(&e, &found);
        assert!(m.missing.is_empty(), "{:?}", m.missing);
        assert_eq!(m.extra.len(), 1);
        assert_eq!(m.extra[0].at(), (2, 1));
        let m = compare(&e, &found[..1]);
        assert_eq!(m.missing.len(), 1);
        assert!(!m.is_empty());
    }
}

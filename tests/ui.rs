//! The fixture harness. Every `.rs` file under `fixtures/` (except
//! `fixtures/projects/`) is audited and its findings compared with the
//! `//~` markers in it: a missing finding and an unmarked finding both fail.
//! A fixture without markers asserts silence. Fixtures under
//! `fixtures/checks/<check-id>/` run with only that check (and
//! `parse-error`) enabled; the others run with every check.
//!
//! Markers (see the README):
//! - `code(); //~ unowned-release` — a finding of that check starts on this line
//! - `//~^ id` / `//~^^ id` — one / two lines above; `//~v id` — the line below
//! - `//~ id-a, id-b` — two findings on this line
//! - `//~ 17 id` — also asserts the 1-based column
//! - `//~ id "text"` — also asserts that the message contains `text`
//! - header `//@ config: file.yaml`, `//@ packs: a.yaml, b.yaml` (relative to the fixture),
//!   `//@ checks: id-a, id-b` (run only these)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockaudit::checks::CheckId;
use lockaudit::config::{self, Settings};
use lockaudit::engine::Engine;
use lockaudit::finding::Finding;
use lockaudit::pack::PackSet;
use lockaudit::prefilter::Prefilter;

#[derive(Debug, Clone)]
struct Expect {
    line: usize,
    check: String,
    column: Option<usize>,
    text: Option<String>,
}

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p != root.join("projects") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn parse_markers(text: &str) -> Result<Vec<Expect>, String> {
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
            out.push(Expect {
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

fn header(text: &str, key: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("//@"))
        .filter_map(|l| l.trim().strip_prefix(key))
        .flat_map(|v| {
            v.trim_start_matches(':')
                .split(',')
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

struct Setup {
    settings: Settings,
    packs: PackSet,
    only: Option<Vec<CheckId>>,
}

fn setup(path: &Path, text: &str) -> Setup {
    let dir = path.parent().unwrap();
    let settings = match header(text, "config").first() {
        Some(c) => {
            let p = dir.join(c);
            config::load(&p, c)
                .unwrap_or_else(|e| panic!("{}: bad fixture config: {e:?}", path.display()))
        }
        None => Settings::default(),
    };
    let mut user: Vec<PathBuf> = settings.rules.clone();
    user.extend(header(text, "packs").iter().map(|p| dir.join(p)));
    let packs = PackSet::load(&user, Path::new("."))
        .unwrap_or_else(|e| panic!("{}: bad fixture pack: {e:?}", path.display()));
    let listed: Vec<CheckId> = header(text, "checks")
        .iter()
        .map(|c| {
            CheckId::parse(c)
                .unwrap_or_else(|| panic!("{}: unknown check `{c}` in //@ checks", path.display()))
        })
        .collect();
    let only = (!listed.is_empty()).then_some(listed).or_else(|| {
        dir.file_name()
            .and_then(|n| n.to_str())
            .and_then(CheckId::parse)
            .filter(|_| {
                dir.parent()
                    .and_then(|p| p.file_name())
                    .is_some_and(|n| n == "checks")
            })
            .map(|c| vec![c])
    });
    Setup {
        settings,
        packs,
        only,
    }
}

fn run(s: &Setup, rel: &str, bytes: &[u8], prefilter: bool) -> Vec<Finding> {
    let pre = prefilter.then(|| Prefilter::new(&s.packs, &s.settings.lock_name));
    let mut engine = Engine::new(&s.packs, &s.settings).with_prefilter(pre.as_ref());
    if let Some(only) = s.only.as_deref() {
        engine = engine.only(only);
    }
    let mut f = engine.check_bytes(rel, bytes, false).findings;
    f.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    f
}

fn describe(f: &Finding) -> String {
    format!(
        "{}:{}: {}[{}]: {}",
        f.span.start.line,
        f.span.start.column,
        f.severity.as_str(),
        f.check.as_str(),
        f.message
    )
}

#[test]
fn fixtures_match_their_markers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    let all = fixtures();
    assert!(!all.is_empty(), "no fixtures found");
    for path in &all {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let expected = match parse_markers(&text) {
            Ok(e) => e,
            Err(e) => {
                failures.push(format!("{rel}: {e}"));
                continue;
            }
        };
        let s = setup(path, &text);
        let actual: Vec<Finding> = run(&s, &rel, &bytes, true)
            .into_iter()
            .filter(|f| f.suppressed.is_none())
            .collect();
        let mut unmatched: Vec<&Finding> = actual.iter().collect();
        let mut problems = Vec::new();
        for e in &expected {
            let pos = unmatched.iter().position(|f| {
                f.span.start.line == e.line
                    && f.check.as_str() == e.check
                    && e.column.is_none_or(|c| f.span.start.column == c)
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
                    text.lines()
                        .nth(e.line.saturating_sub(1))
                        .unwrap_or("")
                        .trim()
                )),
            }
        }
        for f in unmatched {
            problems.push(format!(
                "  found but not marked: {}\n      | {}",
                describe(f),
                text.lines()
                    .nth(f.span.start.line.saturating_sub(1))
                    .unwrap_or("")
                    .trim()
            ));
        }
        if !problems.is_empty() {
            failures.push(format!("{rel}:\n{}", problems.join("\n")));
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} fixture(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

/// The pre-filter is sound: it never changes what a fixture reports.
#[test]
fn prefilter_never_changes_findings() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut diffs = Vec::new();
    for path in fixtures() {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let s = setup(&path, &text);
        let with: Vec<String> = run(&s, &rel, &bytes, true).iter().map(describe).collect();
        let without: Vec<String> = run(&s, &rel, &bytes, false).iter().map(describe).collect();
        if with != without {
            diffs.push(format!(
                "{rel}:\n  with:    {with:?}\n  without: {without:?}"
            ));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn every_check_has_positive_and_negative_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/checks");
    let mut missing = Vec::new();
    for id in CheckId::ALL {
        let dir = root.join(id.as_str());
        let mut positive = 0;
        let mut negative = 0;
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "rs") {
                    let t = std::fs::read_to_string(&p).unwrap_or_default();
                    if t.contains("//~") {
                        positive += 1;
                    } else {
                        negative += 1;
                    }
                }
            }
        }
        if positive == 0 || negative == 0 {
            missing.push(format!(
                "{}: {positive} positive, {negative} negative",
                id.as_str()
            ));
        }
    }
    let counts: BTreeMap<_, _> = missing.iter().map(|m| (m.clone(), ())).collect();
    assert!(
        counts.is_empty(),
        "checks without fixtures:\n{}",
        missing.join("\n")
    );
}

/// A correctness lock's effects in another file of the same crate are
/// followed: the fenced helper is clean, the unfenced one is reported.
#[test]
fn helpers_in_other_files_of_the_crate_are_followed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rel = "fixtures/projects/fenced-crate/src/lib.rs";
    let bytes = std::fs::read(root.join(rel)).unwrap();
    let packs = PackSet::builtin();
    let settings = Settings::default();
    let only = [CheckId::UnfencedCorrectnessLock];
    let engine = Engine::new(&packs, &settings).only(&only);
    let found: Vec<String> = engine
        .check_in_crate(rel, &bytes, root, None)
        .findings
        .iter()
        .map(describe)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("17:23:"), "{found:?}");
    // Alone, the helpers are unknown and nothing is reported; the check
    // says which functions it would follow.
    let alone = engine.check_bytes(rel, &bytes, false);
    assert!(alone.findings.is_empty());
    let asked: Vec<&str> = alone.asked.names.iter().map(String::as_str).collect();
    assert_eq!(asked, ["write_fenced", "write_plain"]);
}

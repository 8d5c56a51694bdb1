//! Conventions enforced as tests: every check has its file, its docs with the
//! fixed headings and its fixtures; ids are kebab-case and unique; summaries
//! and messages follow the message convention; the README's checks table is
//! generated from the registry (`LOCKAUDIT_BLESS=1` rewrites it); and
//! lockaudit reports nothing on its own source (dogfood).

use std::collections::BTreeSet;
use std::path::Path;

use lockaudit::checks::{CheckId, CHECKS};
use lockaudit::config::Settings;
use lockaudit::engine::Engine;
use lockaudit::pack::PackSet;

const HEADINGS: [&str; 7] = [
    "## What it does",
    "## Why is this bad?",
    "## What an operator sees when it fails",
    "## Example",
    "## Use instead",
    "## Simpler alternatives",
    "## Known limitations",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_check_has_its_file_docs_and_fixtures() {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    assert_eq!(
        CHECKS.len(),
        CheckId::ALL.len(),
        "CHECKS and CheckId::ALL disagree"
    );
    for id in CheckId::ALL {
        let s = id.as_str();
        if !seen.insert(s) {
            problems.push(format!("{s}: duplicate id"));
        }
        if !s.chars().all(|c| c.is_ascii_lowercase() || c == '-')
            || s.starts_with('-')
            || s.ends_with('-')
        {
            problems.push(format!("{s}: not kebab-case"));
        }
        if s.starts_with("no-") || s.starts_with("lock-") && s != "lock-without-expiry" {
            problems.push(format!(
                "{s}: ids name the flagged pattern, not a prohibition"
            ));
        }
        let snake = s.replace('-', "_");
        for ext in ["rs", "md"] {
            let p = root().join(format!("src/checks/{snake}.{ext}"));
            if !p.is_file() {
                problems.push(format!("{s}: missing {}", p.display()));
            }
        }
        let docs = id.info().docs;
        let mut last = 0;
        for h in HEADINGS {
            match docs.find(&format!("{h}\n")) {
                Some(i) if i >= last => last = i,
                Some(_) => problems.push(format!("{s}: heading `{h}` out of order")),
                None => problems.push(format!("{s}: docs lack `{h}`")),
            }
        }
        if !docs.contains("```rust") {
            problems.push(format!("{s}: docs have no rust example"));
        }
        if !root().join("fixtures/checks").join(s).is_dir() {
            problems.push(format!("{s}: no fixtures/checks/{s}/"));
        }
        let summary = id.info().summary;
        if summary.ends_with('.') || summary.chars().next().is_some_and(|c| c.is_uppercase()) {
            problems.push(format!(
                "{s}: summary must be lowercase without a final period"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every check enabled, no pre-filter.
fn engine<'a>(packs: &'a PackSet, settings: &'a Settings) -> Engine<'a> {
    Engine {
        packs,
        settings,
        prefilter: None,
        only: None,
        resolver: None,
    }
}

#[test]
fn messages_follow_the_convention() {
    let (packs, settings) = (PackSet::builtin(), Settings::default());
    let engine = engine(&packs, &settings);
    let mut files = Vec::new();
    rs_files(&root().join("fixtures"), &mut files);
    let mut bad = Vec::new();
    let mut checks_seen = BTreeSet::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        for finding in engine.check_bytes("x.rs", &bytes, false).findings {
            checks_seen.insert(finding.check);
            let m = &finding.message;
            let first = m.chars().next().unwrap_or(' ');
            if first.is_uppercase() || m.ends_with('.') || m.is_empty() {
                bad.push(format!("{}: {m}", finding.check));
            }
            if finding.help.is_none() && finding.check != CheckId::UnusedSuppression {
                bad.push(format!("{}: no help line: {m}", finding.check));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "messages are lowercase, without a final period, with help:\n{}",
        bad.join("\n")
    );
    assert!(
        checks_seen.len() >= 10,
        "fixtures exercise only {checks_seen:?}"
    );
}

fn checks_table() -> String {
    let mut s = String::from("| id | default | fires when |\n|---|---|---|\n");
    for c in CHECKS {
        // The anchor is what SARIF `helpUri`s point at.
        s.push_str(&format!(
            "| <a id=\"{0}\"></a>`{0}` | {1} | {2} |\n",
            c.id.as_str(),
            c.severity.as_str(),
            c.summary
        ));
    }
    s
}

#[test]
fn readme_checks_table_is_current() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = "<!-- checks-table:start -->\n";
    let end = "<!-- checks-table:end -->";
    let a = readme
        .find(start)
        .expect("README has the checks-table start marker")
        + start.len();
    let b = readme
        .find(end)
        .expect("README has the checks-table end marker");
    let want = checks_table();
    if readme[a..b] != want {
        if std::env::var_os("LOCKAUDIT_BLESS").is_some() {
            let new = format!("{}{}{}", &readme[..a], want, &readme[b..]);
            std::fs::write(&path, new).unwrap();
        } else {
            panic!(
                "the README checks table is stale: run `LOCKAUDIT_BLESS=1 cargo test --test meta`"
            );
        }
    }
}

/// lockaudit reports nothing on its own source.
#[test]
fn dogfood() {
    let (packs, settings) = (PackSet::builtin(), Settings::default());
    let engine = engine(&packs, &settings);
    let mut files = Vec::new();
    rs_files(&root().join("src"), &mut files);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        for finding in engine
            .check_bytes(&rel, &std::fs::read(&f).unwrap(), false)
            .findings
        {
            found.push(format!(
                "{rel}:{}: {}: {}",
                finding.span.start.line, finding.check, finding.message
            ));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

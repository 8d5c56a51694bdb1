//! Conventions enforced as tests: every check has its file, its docs with the
//! fixed headings and its fixtures; ids are kebab-case and unique; summaries
//! and messages follow the message convention; and lockaudit reports
//! nothing on its own source (dogfood). The documentation generated from
//! the registry (the check pages and the tables of checks) is held by
//! `tests/docs.rs`.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use lockaudit::checks::{CheckId, CHECKS};
use lockaudit::config::Settings;
use lockaudit::engine::Engine;
use lockaudit::pack::PackSet;

use common::root;

const HEADINGS: [&str; 7] = [
    "## What it does",
    "## Why is this bad?",
    "## What an operator sees when it fails",
    "## Example",
    "## Use instead",
    "## Simpler alternatives",
    "## Known limitations",
];

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
    out.extend(common::files_under(dir, "rs", |_| false));
}

/// Every check enabled, no pre-filter.
fn engine<'a>(packs: &'a PackSet, settings: &'a Settings) -> Engine<'a> {
    Engine::new(packs, settings)
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

/// Words that name a backend, or advice that only makes sense on it, by
/// family (Redis and the Redlock crates are one family). Matched at the
/// start of a word, any case.
const BACKEND_WORDS: &[(&str, &[&str])] = &[
    (
        "redis",
        &[
            "redis", "valkey", "set_nx", "setnx", "lua", "pexpire", "delifeq", "redlock", "rslock",
        ],
    ),
    (
        "postgres",
        &[
            "postgres",
            "pg_advisory",
            "pg_try_advisory",
            "pgpool",
            "pgadvisory",
        ],
    ),
    ("mysql", &["mysql", "get_lock", "release_lock", "mariadb"]),
    (
        "etcd",
        &["etcd", "lease_grant", "txnop", "lease_keep_alive"],
    ),
    (
        "dynamodb",
        &[
            "dynamodb",
            "put_item",
            "update_item",
            "condition_expression",
            "conditionalcheckfailed",
        ],
    ),
    ("consul", &["consul"]),
    (
        "zookeeper",
        &["zookeeper", "ephemeral", "czxid", "createmode"],
    ),
    (
        "kubernetes",
        &[
            "kubernetes",
            "kube",
            "resourceversion",
            "holderidentity",
            "leasetransitions",
        ],
    ),
];

fn family(backend: &str) -> &str {
    match backend {
        "redlock" => "redis",
        b => b,
    }
}

/// The backend families whose words `help` uses, other than `own`'s.
fn foreign_backends(help: &str, own: &str) -> Vec<String> {
    static RES: std::sync::OnceLock<Vec<(&str, regex::Regex)>> = std::sync::OnceLock::new();
    let res = RES.get_or_init(|| {
        BACKEND_WORDS
            .iter()
            .map(|(fam, words)| {
                let alts: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
                let re = format!(r"(?i)(?:^|[^A-Za-z0-9])({})", alts.join("|"));
                (*fam, regex::Regex::new(&re).unwrap())
            })
            .collect()
    });
    res.iter()
        .filter(|(fam, _)| *fam != family(own))
        .filter_map(|(fam, re)| re.captures(help).map(|c| format!("{fam} (`{}`)", &c[1])))
        .collect()
}

/// Every check's help, rendered for every API of every built-in
/// pack, speaks that backend's language and names no other backend.
#[test]
fn help_names_only_the_backend_at_hand() {
    let packs = PackSet::builtin();
    let mut bad = Vec::new();
    let mut rendered = 0;
    let mut from_packs = 0;
    for (pi, pack) in packs.packs.iter().enumerate() {
        for ai in 0..pack.apis.len() {
            let r = lockaudit::pack::ApiRef { pack: pi, api: ai };
            for info in CHECKS.iter().filter(|c| c.run.is_some()) {
                let help = lockaudit::checks::help_for(&packs, r, info.id);
                rendered += 1;
                if help != info.help {
                    from_packs += 1;
                }
                for other in foreign_backends(&help, &pack.backend) {
                    bad.push(format!(
                        "{} × {}: names {other}: {help}",
                        pack.apis[ai].id, info.id
                    ));
                }
            }
        }
    }
    // Not vacuous: every pack is rendered, and most backends bring their own.
    assert!(rendered > 1000, "only {rendered} helps rendered");
    assert!(from_packs > 300, "only {from_packs} helps come from packs");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The neutral helps name no backend at all.
    for info in CHECKS {
        let found = foreign_backends(info.help, "none");
        assert!(
            found.is_empty(),
            "{}: neutral help names {found:?}",
            info.id
        );
    }
}

/// The same over every finding the fixtures produce, so a check
/// that writes its own help instead of asking the pack is caught too; and
/// no message says "lock the lock" or "on the lock".
#[test]
fn findings_speak_their_backends_language() {
    let (packs, settings) = (PackSet::builtin(), Settings::default());
    let engine = engine(&packs, &settings);
    let mut files = Vec::new();
    rs_files(&root().join("fixtures"), &mut files);
    let mut bad = Vec::new();
    let mut seen = 0;
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        for finding in engine.check_bytes("x.rs", &bytes, false).findings {
            let Some(backend) = finding.backend.as_deref() else {
                continue;
            };
            seen += 1;
            let help = finding.help.as_deref().unwrap_or("");
            for other in foreign_backends(help, backend) {
                bad.push(format!(
                    "{}: {} on {backend} names {other}: {help}",
                    f.display(),
                    finding.check
                ));
            }
            let m = finding.message.to_lowercase();
            if m.contains("lock the lock") || m.contains("on the lock") {
                bad.push(format!("{}: {}", f.display(), finding.message));
            }
        }
    }
    assert!(seen > 100, "only {seen} findings with a backend");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

//! Rule packs: the built-in packs load and match `rules/schema.json`, the
//! schema is current, bad packs are reported with every problem at its line
//! and column, the inventory lists every acquisition of the backend fixtures
//! and nothing else, and a user pack is audited like a built-in backend.
//!
//! `LOCKAUDIT_BLESS=1 cargo test --test packs` rewrites `rules/schema.json`
//! and the `.stderr` files of `fixtures/packs/bad/`.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use lockaudit::pack::{builtin::BUILTIN, PackSet, Role};

use common::{markers, rel, root};

fn bless() -> bool {
    std::env::var_os("LOCKAUDIT_BLESS").is_some_and(|v| v != "0")
}

/// Compares `actual` with the file at `path`, or rewrites it when blessing.
fn expect_file(path: &Path, actual: &str) -> Result<(), String> {
    if bless() {
        std::fs::write(path, actual).unwrap();
        return Ok(());
    }
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    if expected == actual {
        Ok(())
    } else {
        Err(format!(
            "{} is stale (LOCKAUDIT_BLESS=1 cargo test --test packs rewrites it)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        ))
    }
}

fn lockaudit(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let r = common::lockaudit(dir, args);
    (r.code, r.stdout, r.stderr)
}

fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    common::files_under(dir, ext, |_| false)
}

#[test]
fn schema_is_current() {
    let path = root().join("rules/schema.json");
    if let Err(e) = expect_file(&path, &PackSet::schema_json()) {
        panic!("{e}");
    }
}

#[test]
fn every_builtin_pack_loads_and_matches_the_schema() {
    let set = PackSet::builtin();
    assert_eq!(set.packs.len(), BUILTIN.len());
    assert_eq!(
        BUILTIN.last().map(|(name, _)| *name),
        Some("fenced-effects.yaml"),
        "fenced-effects.yaml holds generic shapes and must stay last"
    );
    let schema: serde_json::Value = serde_json::from_str(&PackSet::schema_json()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is valid");
    let mut problems = Vec::new();
    for (name, text) in BUILTIN {
        let value: serde_json::Value = yaml_serde::from_str(text).unwrap();
        for e in validator.iter_errors(&value) {
            problems.push(format!("{name}: {e} at {}", e.instance_path));
        }
    }
    // Every API carries the properties its role needs.
    for pack in &set.packs {
        for api in &pack.apis {
            let at = format!("{}: {}", pack.source, api.id);
            match api.role {
                Role::Acquire | Role::TryAcquire => {
                    if api.token.is_none() {
                        problems.push(format!("{at}: an acquisition without `token`"));
                    }
                    if api.result.is_none() {
                        problems.push(format!("{at}: an acquisition without `result`"));
                    }
                    if api.atomic.is_none() {
                        problems.push(format!("{at}: an acquisition without `atomic`"));
                    }
                }
                Role::Release if api.owner_checked.is_none() => {
                    problems.push(format!("{at}: a release without `owner-checked`"));
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn bad_packs_report_every_problem_with_its_location() {
    let dir = root().join("fixtures/packs/bad");
    let mut failures = Vec::new();
    let packs = files_under(&dir, "yaml");
    assert!(packs.len() >= 8, "expected the bad-pack fixtures");
    for path in packs {
        let shown = rel(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        let err = match PackSet::compile_one(&shown, &text) {
            Ok(_) => {
                failures.push(format!("{shown}: compiled, but it is a bad pack"));
                continue;
            }
            Err(e) => e,
        };
        for p in &err.problems {
            if p.line == 0 || p.column == 0 || p.path != shown {
                failures.push(format!("{shown}: a problem without a location: {p}"));
            }
        }
        let rendered = lockaudit::diag::render_yaml_errors(&err, false);
        if let Err(e) = expect_file(&path.with_extension("stderr"), &rendered) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_bad_user_pack_stops_the_run_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("fixtures/packs/bad/unknown_field.yaml"),
        dir.path().join("team.yaml"),
    )
    .unwrap();
    std::fs::write(dir.path().join("lockaudit.yaml"), "rules:\n  - team.yaml\n").unwrap();
    std::fs::write(dir.path().join("main.rs"), "fn main() {}\n").unwrap();
    let (code, _, stderr) = lockaudit(dir.path(), &["check", "."]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("team.yaml:9:5"), "{stderr}");
    assert!(stderr.contains("team.yaml:12:41"), "{stderr}");
}

/// Lines that a `missing-purpose` marker points at.
fn marked_acquisitions(path: &Path) -> Vec<usize> {
    let text = std::fs::read_to_string(path).unwrap();
    markers::parse(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter(|m| m.check == lockaudit::checks::CheckId::MissingPurpose)
        .map(|m| m.line)
        .collect()
}

/// The expiry column says when a lock ends on its own: a `SET … PX n`
/// shows its TTL with the word that gives its unit, a server's lease is
/// `lease`, a database lock ends with its session or transaction.
#[test]
fn inventory_expiry_is_the_ttl_or_how_the_lock_ends() {
    let (code, stdout, stderr) = lockaudit(
        root(),
        &["inventory", "fixtures/checks", "--format", "json"],
    );
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let expiries: BTreeSet<String> = json["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["expiry"].as_str().unwrap().to_string())
        .collect();
    for shown in [
        "PX 30_000",
        "EX 60",
        "lease",
        "session end",
        "transaction end",
        "none",
    ] {
        assert!(expiries.contains(shown), "`{shown}` not among {expiries:?}");
    }
}

#[test]
fn inventory_lists_every_backend_acquisition_and_no_in_process_lock() {
    let (code, stdout, stderr) = lockaudit(
        root(),
        &[
            "inventory",
            "fixtures/backends",
            "fixtures/precision",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = json["locks"].as_array().unwrap();
    let mut listed = BTreeSet::new();
    let mut problems = Vec::new();
    for r in rows {
        let path = r["path"].as_str().unwrap().to_string();
        let line = r["line"].as_u64().unwrap() as usize;
        let token = r["token"].as_str().unwrap();
        let release = r["release"].as_str().unwrap();
        if !["yes", "no", "not available from this API"].contains(&token) {
            problems.push(format!("{path}:{line}: token `{token}`"));
        }
        if ![
            "owner-checked",
            "owner-checked (on drop)",
            "unowned",
            "unowned (through a pool)",
            "at transaction end",
            "not described by its pack",
            "not found",
        ]
        .contains(&release)
        {
            problems.push(format!("{path}:{line}: release `{release}`"));
        }
        if r["backend"].as_str().unwrap_or("").is_empty() {
            problems.push(format!("{path}:{line}: no backend"));
        }
        // A pack without a release API cannot have found one.
        if r["backend"] == "sql-lease" && release != "not described by its pack" {
            problems.push(format!("{path}:{line}: sql-lease release `{release}`"));
        }
        // One meaning: when the lock ends on its own. A TTL word stands
        // with its value when the code shows one.
        let expiry = r["expiry"].as_str().unwrap();
        if expiry.is_empty() || ["server lease", "session", "transaction"].contains(&expiry) {
            problems.push(format!("{path}:{line}: expiry `{expiry}`"));
        }
        listed.insert((path, line));
    }
    let mut expected = BTreeSet::new();
    for path in files_under(&root().join("fixtures/backends"), "rs") {
        let text = std::fs::read_to_string(&path).unwrap();
        // Fixtures that bring their own pack (`//@ packs:`) need it loaded.
        if text.contains("//@ packs:") {
            continue;
        }
        for line in marked_acquisitions(&path) {
            expected.insert((rel(&path), line));
        }
    }
    assert!(expected.len() > 40, "expected the backend fixtures");
    for missing in expected.difference(&listed) {
        problems.push(format!("not listed: {}:{}", missing.0, missing.1));
    }
    for extra in listed.difference(&expected) {
        problems.push(format!(
            "listed, but not an acquisition: {}:{}",
            extra.0, extra.1
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not found"))
        + 1
}

#[test]
fn a_user_pack_is_audited_like_a_builtin_backend() {
    let dir = root().join("fixtures/projects/acme");
    let code_text = std::fs::read_to_string(dir.join("src/billing.rs")).unwrap();

    let (code, stdout, stderr) = lockaudit(&dir, &["check", "--format", "json"]);
    assert_eq!(code, 1, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let found: BTreeSet<(String, usize, String)> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["backend"], "acme-locks");
            // JSON paths are from the repository root: this checkout's, or
            // the project's own config directory outside a checkout.
            let path = f["path"].as_str().unwrap();
            (
                path.strip_prefix("fixtures/projects/acme/")
                    .unwrap_or(path)
                    .to_string(),
                f["line"].as_u64().unwrap() as usize,
                f["check"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, usize, String)> = [
        (
            line_of(&code_text, "\"billing:close-month\""),
            "missing-purpose",
        ),
        (
            line_of(&code_text, "\"billing:settle\""),
            "unfenced-correctness-lock",
        ),
    ]
    .into_iter()
    .map(|(l, c)| ("src/billing.rs".to_string(), l, c.to_string()))
    .collect();
    assert_eq!(found, expected);

    let (code, stdout, stderr) = lockaudit(&dir, &["inventory", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = json["locks"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{stdout}");
    for r in rows {
        assert_eq!(r["backend"], "acme-locks");
        assert_eq!(r["api"], "acme.acquire");
        assert_eq!(r["release"], "owner-checked");
        let expected_token = if r["key"] == "billing:invoice-seq" {
            "yes"
        } else {
            "no"
        };
        assert_eq!(r["token"], expected_token, "{r}");
    }
}

/// Built-in packs compile their regexes on first use, so a bad one would
/// only show in a run that reaches it: compile every one here.
#[test]
fn every_builtin_pattern_compiles() {
    let packs = PackSet::builtin();
    let mut count = 0;
    for pack in &packs.packs {
        for api in &pack.apis {
            let m = &api.matcher;
            let expiry = api.expiry.iter().flat_map(|e| e.text.iter());
            for p in m
                .text
                .iter()
                .chain(&m.no_text)
                .chain(&m.receiver)
                .chain(expiry)
            {
                if let Err(e) = regex::Regex::new(p.as_str()) {
                    panic!("{} {}: `{}`: {e}", pack.backend, api.id, p.as_str());
                }
                count += 1;
            }
        }
    }
    assert!(count > 50, "only {count} patterns");
}

/// Every API of every built-in pack says where its shape comes
/// from: a `# source:` comment right under its `- id:` naming the crate (or
/// manual) and its version, or saying that the shape is not pinned to one.
#[test]
fn every_builtin_api_names_its_source() {
    let version = regex::Regex::new(r"\d+\.(\d+|x)|not pinned").unwrap();
    let mut bad = Vec::new();
    let mut apis = 0;
    for path in files_under(&root().join("rules"), "yaml") {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let Some(id) = l.strip_prefix("  - id: ") else {
                continue;
            };
            apis += 1;
            let src = lines
                .get(i + 1)
                .and_then(|n| n.trim().strip_prefix("# source: "));
            match src {
                Some(s) if version.is_match(s) => {}
                Some(s) => bad.push(format!(
                    "{}: {id}: source without a version: {s}",
                    rel(&path)
                )),
                None => bad.push(format!("{}: {id}: no `# source:` line", rel(&path))),
            }
        }
    }
    assert!(apis > 150, "only {apis} apis found");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every API of every built-in pack is exercised by at least
/// one fixture: some call in `fixtures/` is classified as that API. An API
/// no fixture reaches is a shape nobody has checked against real code.
#[test]
fn every_builtin_api_is_covered_by_a_fixture() {
    use lockaudit::model::extract::{extract, Options};
    let packs = PackSet::builtin();
    let settings = lockaudit::config::Settings::default();
    let mut covered = BTreeSet::new();
    let mut files = files_under(&root().join("fixtures"), "rs");
    files.retain(|p| !p.to_string_lossy().contains("/fixtures/packs/bad/"));
    assert!(files.len() > 50, "expected the fixtures");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        let src = lockaudit::source::SourceFile::new(rel(&path), text.clone());
        let opts = Options::new(&settings.lock_name);
        for e in extract(&file, &src, &packs, &opts).events {
            covered.insert(e.api);
        }
    }
    let mut missing = Vec::new();
    let mut total = 0;
    for (pi, pack) in packs.packs.iter().enumerate() {
        for (ai, api) in pack.apis.iter().enumerate() {
            total += 1;
            if !covered.contains(&lockaudit::pack::ApiRef { pack: pi, api: ai }) {
                missing.push(format!("{}: {}", pack.source, api.id));
            }
        }
    }
    assert!(total > 150, "only {total} apis");
    assert!(
        missing.is_empty(),
        "{} of {total} built-in apis have no fixture:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

//! End to end: the built `lockaudit` binary on the small projects under
//! `fixtures/projects/` (and on temporary copies of them): exit codes,
//! every output format (insta snapshots in `tests/snapshots/`), SARIF
//! against the bundled SARIF 2.1.0 schema, baselines, `--new-since`,
//! suppressions in machine output, `--output`, `--jobs` and `init`;
//! suggested fixes and `check --fix`, and `annotate` (the language server
//! is `tests/lsp.rs`).
//!
//! Snapshots are written with `INSTA_UPDATE=always cargo test --test cli`
//! and reviewed by reading the `.snap` files; CI never writes them.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::LazyLock;

use serde_json::Value;

use common::{copy_dir, copy_project, lockaudit, normalise_sarif, project};

/// A copy of a fixture project whose config is broken on purpose. It is
/// stored as `lockaudit.yaml.broken`, so that `lockaudit check fixtures/`
/// (which discovers every config under it) is not stopped by it; the copy
/// gets its real name back.
fn broken_project(name: &str) -> tempfile::TempDir {
    let tmp = copy_project(name);
    fs::rename(
        tmp.path().join("lockaudit.yaml.broken"),
        tmp.path().join("lockaudit.yaml"),
    )
    .unwrap();
    tmp
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

const FORMATS: [&str; 6] = ["human", "short", "table", "json", "sarif", "github"];

// ---- exit codes ---------------------------------------------------------

#[test]
fn unannotated_set_nx_px_exits_1_with_a_diagnostic_on_the_call() {
    let run = lockaudit(&project("unannotated"), &["--color", "never"]);
    assert_eq!(run.code, 1, "{run:?}");
    // The diagnostic names the check, the place, and underlines the call.
    assert!(
        run.stdout.starts_with("error[missing-purpose]: "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("--> src/lib.rs:2:33"), "{}", run.stdout);
    assert!(
        run.stdout.contains("`SET … NX PX` takes a redis lock here"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("help: "), "{}", run.stdout);
    insta::assert_snapshot!("unannotated_human", run.stdout);
}

#[test]
fn annotated_set_nx_px_exits_0() {
    let run = lockaudit(&project("annotated"), &["--color", "never"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "no findings; 1 file audited\n");
}

#[test]
fn in_process_mutexes_exit_0() {
    let run = lockaudit(&project("in-process"), &["check", "."]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "no findings; 1 file audited\n");
}

#[test]
fn broken_rule_pack_exits_2_naming_file_line_and_column() {
    let tmp = broken_project("bad-pack");
    let run = lockaudit(tmp.path(), &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        common::has_problem(&run.stderr, "tools/acme-locks.yaml:8:11", "apis[0].role"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!("bad_pack_stderr", run.stderr);
}

#[test]
fn bad_config_exits_2_naming_file_line_and_column() {
    let tmp = broken_project("bad-config");
    let run = lockaudit(tmp.path(), &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    for place in [
        "lockaudit.yaml:3:20",
        "lockaudit.yaml:4:3", // under the unknown id, not its value
        "lockaudit.yaml:7:18",
    ] {
        assert!(run.stderr.contains(place), "{place} in:\n{}", run.stderr);
    }
    insta::assert_snapshot!("bad_config_stderr", run.stderr);
}

#[test]
fn unknown_config_key_exits_2_naming_file_line_and_column() {
    let tmp = copy_project("annotated");
    fs::write(
        tmp.path().join("lockaudit.yaml"),
        "default-purpose: sometimes\nfail-fast: true\n",
    )
    .unwrap();
    let run = lockaudit(tmp.path(), &[]);
    assert_eq!(run.code, 2, "{run:?}");
    // The unknown key and the bad value are reported together.
    assert!(
        common::has_problem(&run.stderr, "lockaudit.yaml:2:1", "unknown key `fail-fast`"),
        "{}",
        run.stderr
    );
    assert!(
        common::has_problem(
            &run.stderr,
            "lockaudit.yaml:1:18",
            "`sometimes` is not a purpose"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn nonexistent_path_exits_2() {
    let run = lockaudit(&project("annotated"), &["check", "src", "no-such-dir"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("no-such-dir: no such file or directory"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_arguments_exit_2() {
    let dir = project("annotated");
    for args in [
        &["--format", "xml"][..],
        &["--fail-on", "sometimes"],
        &["--config", "missing.yaml"],
        &["--baseline", "missing.json"],
    ] {
        let run = lockaudit(&dir, args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
    }
}

#[test]
fn fail_on_levels() {
    // One unused suppression: a warning by default, a note with as-note.yaml.
    let dir = project("severities");
    let code = |args: &[&str]| lockaudit(&dir, args).code;
    assert_eq!(code(&[]), 1, "the default is --fail-on warning");
    assert_eq!(code(&["--fail-on", "note"]), 1);
    assert_eq!(code(&["--fail-on", "warning"]), 1);
    assert_eq!(code(&["--fail-on", "error"]), 0);
    assert_eq!(code(&["--fail-on", "never"]), 0);
    let note = ["--config", "as-note.yaml"];
    assert_eq!(code(&note), 0);
    assert_eq!(code(&[&note[..], &["--fail-on", "warning"]].concat()), 0);
    assert_eq!(code(&[&note[..], &["--fail-on", "note"]].concat()), 1);
    assert_eq!(code(&[&note[..], &["--fail-on", "never"]].concat()), 0);

    // Errors fail every level but `never`.
    let mixed = project("mixed");
    for (level, expected) in [("error", 1), ("warning", 1), ("note", 1), ("never", 0)] {
        let run = lockaudit(&mixed, &["--fail-on", level, "--format", "short"]);
        assert_eq!(run.code, expected, "--fail-on {level}");
        // The report itself does not depend on --fail-on.
        assert!(run
            .stdout
            .ends_with("5 findings (5 errors) in 3 files; 6 files audited; 3 suppressed\n"));
    }
}

// ---- formats ------------------------------------------------------------

/// The SARIF `%SRCROOT%` is the absolute current directory: replace it.
/// The rules' `help` is each check's whole documentation page, checked
/// field by field in `assert_github_ready`; the snapshot elides it so that
/// editing a check's docs does not churn the SARIF snapshot.

#[test]
fn snapshots_of_every_format_on_the_mixed_project() {
    // A copy outside any repository: machine paths are relative to the
    // repository root, which here is the project itself.
    let tmp = copy_project("mixed");
    let dir = tmp.path();
    for format in FORMATS {
        let run = lockaudit(dir, &["--format", format, "--color", "never"]);
        assert_eq!(run.code, 1, "{format}: {run:?}");
        assert_eq!(run.stderr, "", "{format}");
        let text = if format == "sarif" {
            normalise_sarif(&run.stdout)
        } else {
            run.stdout
        };
        insta::assert_snapshot!(format!("mixed_{format}"), text);
    }
}

/// Human output at a given terminal width (`COLUMNS`).
fn human_at(dir: &Path, columns: &str) -> String {
    common::lockaudit_with(dir, &["--color", "never"], |c| {
        c.env("COLUMNS", columns);
    })
    .stdout
}

/// rustc-style headings, the finding's own place before related ones,
/// prose wrapped to the width without splitting inline code.
#[test]
fn human_output_wraps_to_80_and_120_columns() {
    let tmp = copy_project("mixed");
    for columns in ["80", "120"] {
        let text = human_at(tmp.path(), columns);
        let width: usize = columns.parse().unwrap();
        for line in text.lines() {
            // Source lines are cut around their span; only a code span
            // too long for any line, and the one-line notes, may be longer.
            if !line.contains("`set_options(")
                && !line.contains("`if redis.call(")
                && !line.starts_with("note: ")
            {
                assert!(line.chars().count() <= width, "{columns}: {line:?}");
            }
            assert_eq!(
                line.matches('`').count() % 2,
                0,
                "code split at {columns}: {line:?}"
            );
        }
        insta::assert_snapshot!(format!("mixed_human_{columns}"), text);
    }
    let text = human_at(tmp.path(), "120");
    assert!(text.starts_with("error[parse-error]: "), "{text}");
    let release = text.find("error[unowned-release]").unwrap();
    let own = text[release..].find("--> src/jobs/mod.rs:10:9").unwrap();
    let related = text[release..].find("::: src/jobs/mod.rs:5:25").unwrap();
    assert!(own < related, "{text}");
}

#[test]
fn short_is_one_line_per_finding_then_the_summary() {
    let run = lockaudit(&project("mixed"), &["--format", "short"]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", run.stdout);
    for l in &lines[..5] {
        let (place, rest) = l.split_once(": ").unwrap();
        let parts: Vec<&str> = place.split(':').collect();
        assert_eq!(parts.len(), 3, "{l}");
        assert!(parts[1].parse::<usize>().is_ok() && parts[2].parse::<usize>().is_ok());
        assert!(rest.starts_with("error["), "{l}");
    }
    let quiet = lockaudit(&project("mixed"), &["--format", "short", "--quiet"]);
    assert_eq!(quiet.stdout.lines().count(), 5);
}

#[test]
fn table_has_a_fixed_width_when_not_a_terminal() {
    let run = lockaudit(&project("mixed"), &["--format", "table"]);
    let (tables, summary) = run.stdout.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(
        summary,
        "5 findings (5 errors) in 3 files; 6 files audited; 3 suppressed"
    );
    let end = tables.find('┘').expect("two tables") + '┘'.len_utf8();
    let (findings, counts) = tables.split_at(end);
    // The findings table is laid out at 100 columns, every line alike.
    for line in findings.lines() {
        assert_eq!(line.chars().count(), 100, "{line}");
    }
    // One row per finding: each starts with its location.
    let rows = findings.lines().filter(|l| l.starts_with("│ src/")).count();
    assert_eq!(rows, 5, "{findings}");
    // Then counts per check and severity, with a total.
    assert!(counts.contains("│ check "), "{counts}");
    assert!(
        counts
            .lines()
            .any(|l| l.starts_with("│ total ") && l.contains("┆     5 │")),
        "{counts}"
    );
}

#[test]
fn github_annotations_are_one_workflow_command_per_unsuppressed_finding() {
    let tmp = copy_project("mixed");
    let run = lockaudit(tmp.path(), &["--format", "github"]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", run.stdout);
    for l in lines {
        let (props, message) = l
            .strip_prefix("::error ")
            .and_then(|r| r.split_once("::"))
            .unwrap_or_else(|| panic!("not a workflow command: {l}"));
        let keys: Vec<&str> = props
            .split(',')
            .map(|p| p.split_once('=').unwrap().0)
            .collect();
        assert_eq!(
            keys,
            ["file", "line", "col", "endLine", "endColumn", "title"],
            "{l}"
        );
        assert!(props.contains("file=src/"), "{l}");
        assert!(!message.is_empty());
    }
}

#[test]
fn json_has_exactly_the_contract_fields_sorted() {
    let run = lockaudit(&project("mixed"), &["--format", "json"]);
    let report = json(&run.stdout);
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    let findings = report["findings"].as_array().unwrap();
    let expected: BTreeSet<&str> = [
        "check",
        "severity",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "message",
        "backend",
        "purpose",
        "fingerprint",
        "suppressed",
    ]
    .into();
    let mut keys = Vec::new();
    for f in findings {
        let fields: BTreeSet<&str> = f.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(fields, expected);
        assert!(f["line"].as_u64().unwrap() >= 1 && f["column"].as_u64().unwrap() >= 1);
        keys.push((
            f["path"].as_str().unwrap().to_string(),
            f["line"].as_u64().unwrap(),
            f["column"].as_u64().unwrap(),
            f["check"].as_str().unwrap().to_string(),
        ));
    }
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(
        keys, sorted,
        "findings are sorted by path, line, column, check"
    );
    assert_eq!(report["summary"]["findings"], 5);
    assert_eq!(report["summary"]["suppressed"], 3);
}

// ---- SARIF ----------------------------------------------------------------

/// The OASIS SARIF 2.1.0 schema (draft 2020-12), as shipped in the npm
/// package `@microsoft/sarif-multitool-linux` 5.7.0: the same schema the
/// SARIF Multitool validates with. Formats (`uri`, `date-time`) are checked
/// too.
static SARIF_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema = json(include_str!("data/sarif-2.1.0.json"));
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
});

fn schema_errors(log: &Value) -> Vec<String> {
    SARIF_SCHEMA
        .iter_errors(log)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect()
}

fn assert_valid_sarif(log: &Value) {
    let errors = schema_errors(log);
    assert!(
        errors.is_empty(),
        "SARIF schema errors:\n{}",
        errors.join("\n")
    );
}

#[test]
fn the_schema_check_catches_what_the_multitool_misses() {
    let run = lockaudit(&project("mixed"), &["--format", "sarif"]);
    let mut log = json(&run.stdout);
    assert_valid_sarif(&log);
    log["runs"][0]["results"][0]["level"] = Value::from("critical");
    assert!(!schema_errors(&log).is_empty());
    log["runs"][0]["results"][0]["level"] = Value::from("error");
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        Value::from(0);
    assert!(!schema_errors(&log).is_empty());
}

/// Everything the SPEC's output contract and GitHub code scanning ask of a
/// SARIF log, beyond what the schema says.
fn assert_github_ready(log: &Value) {
    assert_valid_sarif(log);
    assert_eq!(log["version"], "2.1.0");
    assert!(log["$schema"].as_str().unwrap().starts_with("https://"));
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "lockaudit");
    assert_eq!(driver["semanticVersion"], env!("CARGO_PKG_VERSION"));
    assert!(driver["informationUri"]
        .as_str()
        .unwrap()
        .starts_with("https://"));

    let rules = driver["rules"].as_array().unwrap();
    let listed = json(&lockaudit(&project("mixed"), &["rules", "--format", "json"]).stdout);
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let listed_ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, listed_ids, "every check is a rule, in registry order");
    for r in rules {
        let id = r["id"].as_str().unwrap();
        let name = r["name"].as_str().unwrap();
        assert!(
            !name.is_empty() && name != id,
            "{id}: name must differ from id"
        );
        for key in ["shortDescription", "fullDescription"] {
            let text = r[key]["text"].as_str().unwrap();
            assert!(!text.is_empty() && text.len() <= 1024, "{id}.{key}");
        }
        assert!(!r["help"]["text"].as_str().unwrap().is_empty(), "{id}");
        assert!(!r["help"]["markdown"].as_str().unwrap().is_empty(), "{id}");
        let level = r["defaultConfiguration"]["level"].as_str().unwrap();
        assert!(["error", "warning", "note"].contains(&level), "{id}");
        let tags = r["properties"]["tags"].as_array().unwrap();
        assert!(!tags.is_empty() && tags.len() <= 20, "{id}");
        assert!(tags.iter().all(Value::is_string), "{id}");
        let precision = r["properties"]["precision"].as_str().unwrap();
        assert!(
            ["very-high", "high", "medium", "low"].contains(&precision),
            "{id}"
        );
    }

    let root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        root.starts_with("file:///") && root.ends_with('/'),
        "{root}"
    );
    let mut hashes = BTreeSet::new();
    for r in run["results"].as_array().unwrap() {
        let index = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], r["ruleId"]);
        assert!(!r["message"]["text"].as_str().unwrap().is_empty());
        let locations = r["locations"].as_array().unwrap();
        assert_eq!(locations.len(), 1);
        let phys = &locations[0]["physicalLocation"];
        let artifact = &phys["artifactLocation"];
        let uri = artifact["uri"].as_str().unwrap();
        if uri.starts_with("file:") {
            assert!(artifact.get("uriBaseId").is_none(), "{uri}");
        } else {
            assert!(!uri.starts_with('/') && !uri.contains('\\'), "{uri}");
            assert_eq!(artifact["uriBaseId"], "%SRCROOT%");
        }
        let region = &phys["region"];
        let n = |k: &str| region[k].as_u64().unwrap_or_else(|| panic!("region.{k}"));
        assert!(n("startLine") >= 1 && n("startColumn") >= 1);
        assert!(n("endLine") >= n("startLine"));
        if n("endLine") == n("startLine") {
            assert!(n("endColumn") > n("startColumn"), "{region}");
        }
        let hash = r["partialFingerprints"]["primaryLocationLineHash"]
            .as_str()
            .unwrap();
        assert!(hashes.insert(hash.to_string()), "duplicate hash {hash}");
    }
}

#[test]
fn sarif_is_schema_valid_and_github_ready() {
    let run = lockaudit(&project("mixed"), &["--format", "sarif"]);
    assert_github_ready(&json(&run.stdout));

    // No results at all.
    let clean = lockaudit(&project("annotated"), &["--format", "sarif"]);
    assert_eq!(clean.code, 0);
    let log = json(&clean.stdout);
    assert_eq!(log["runs"][0]["results"], Value::Array(Vec::new()));
    assert_github_ready(&log);

    // Every fixture of the fixture harness: more checks, secondary locations.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let all = lockaudit(
        root,
        &[
            "check",
            "fixtures",
            "--format",
            "sarif",
            "--exclude",
            "fixtures/projects/**",
        ],
    );
    assert_eq!(all.code, 1, "{}", all.stderr);
    assert_github_ready(&json(&all.stdout));
}

#[test]
fn sarif_uses_absolute_uris_for_files_outside_the_current_directory() {
    let elsewhere = tempfile::tempdir().unwrap();
    let target = project("unannotated");
    let run = lockaudit(
        elsewhere.path(),
        &["check", target.to_str().unwrap(), "--format", "sarif"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let log = json(&run.stdout);
    assert_github_ready(&log);
    let artifact =
        &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert!(
        artifact["uri"]
            .as_str()
            .unwrap()
            .ends_with("/fixtures/projects/unannotated/src/lib.rs"),
        "{artifact}"
    );
}

// ---- suppressions -------------------------------------------------------

#[test]
fn suppressed_findings_stay_in_json_and_sarif() {
    let tmp = copy_project("mixed");
    let dir = tmp.path();
    let report = json(&lockaudit(dir, &["--format", "json"]).stdout);
    let suppressed: Vec<(String, u64, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["suppressed"] == true)
        .map(|f| {
            // Paths are relative to the repository root: keep `src/…`.
            let path = f["path"].as_str().unwrap();
            (
                path[path.rfind("src/").unwrap()..].to_string(),
                f["line"].as_u64().unwrap(),
                f["check"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        suppressed,
        [
            ("src/gen/client.rs".into(), 5, "missing-purpose".into()),
            ("src/jobs/mod.rs".into(), 16, "lock-without-expiry".into()),
            ("src/jobs/mod.rs".into(), 21, "unowned-release".into()),
        ]
    );

    let log = json(&lockaudit(dir, &["--format", "sarif"]).stdout);
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 8, "suppressed results are kept");
    let mut justifications = Vec::new();
    for r in results {
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        let line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
            .as_u64()
            .unwrap();
        match r.get("suppressions") {
            Some(s) => {
                let s = s.as_array().unwrap();
                assert_eq!(s.len(), 1);
                assert_eq!(s[0]["kind"], "inSource");
                justifications.push((
                    uri.to_string(),
                    line,
                    s[0].get("justification")
                        .map(|j| j.as_str().unwrap().to_string()),
                ));
            }
            None => assert!(!suppressed.iter().any(|(p, l, _)| p == uri && *l == line)),
        }
    }
    assert_eq!(
        justifications,
        [
            (
                "src/gen/client.rs".into(),
                5,
                Some("generated client, audited upstream".into())
            ),
            (
                "src/jobs/mod.rs".into(),
                16,
                Some("the importer sets the TTL in its own script".into())
            ),
            ("src/jobs/mod.rs".into(), 21, None),
        ]
    );

    // The text formats hide suppressed findings, count them, and point out
    // the suppression that gives no reason.
    let human = lockaudit(dir, &["--color", "never"]).stdout;
    assert!(human
        .contains("note: src/jobs/mod.rs:21:9: `unowned-release` is suppressed without a reason"));
    assert!(!human.contains("importer sets the TTL"));
}

// ---- --jobs and --output --------------------------------------------------

#[test]
#[ignore = "costly (24 runs of the binary): .ci/run runs it; cargo test -- --ignored"]
fn output_bytes_are_identical_for_every_jobs_count() {
    let dir = project("mixed");
    for format in FORMATS {
        let reference = lockaudit(&dir, &["--format", format, "--jobs", "1"]);
        for jobs in [None, Some("2"), Some("8")] {
            let mut args = vec!["--format", format];
            if let Some(j) = jobs {
                args.extend(["--jobs", j]);
            }
            let run = lockaudit(&dir, &args);
            assert_eq!(run.code, reference.code, "{format} {jobs:?}");
            assert_eq!(
                run.stdout, reference.stdout,
                "{format} with --jobs {jobs:?}"
            );
        }
    }
}

#[test]
fn output_file_has_the_same_bytes_as_stdout() {
    let dir = project("mixed");
    let out = tempfile::tempdir().unwrap();
    for format in FORMATS {
        let stdout = lockaudit(&dir, &["--format", format]);
        let file = out.path().join(format!("report.{format}"));
        // Replaces whatever was there.
        fs::write(
            &file,
            "old contents that are much longer than nothing at all",
        )
        .unwrap();
        let run = lockaudit(
            &dir,
            &["--format", format, "--output", file.to_str().unwrap()],
        );
        assert_eq!(run.code, stdout.code, "{format}");
        assert_eq!(run.stdout, "", "{format}: nothing on stdout");
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            stdout.stdout,
            "{format}"
        );
    }
    // Nothing but the reports: no temporary files left behind.
    let names: BTreeSet<String> = fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: BTreeSet<String> = FORMATS.iter().map(|f| format!("report.{f}")).collect();
    assert_eq!(names, expected);
}

#[test]
fn output_into_a_missing_directory_exits_2() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("no/such/dir/report.sarif");
    let run = lockaudit(
        &project("mixed"),
        &["--format", "sarif", "-o", file.to_str().unwrap()],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("cannot write"), "{}", run.stderr);
    assert!(!file.exists());
}

// ---- baselines ----------------------------------------------------------

fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    let text = fs::read_to_string(path).unwrap();
    fs::write(path, f(text)).unwrap();
}

fn fingerprints(dir: &Path) -> BTreeSet<String> {
    json(&lockaudit(dir, &["--format", "json"]).stdout)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fingerprint"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn baseline_survives_moved_lines_fails_on_new_findings_and_reports_stale_entries() {
    let tmp = copy_project("mixed");
    let dir = tmp.path();
    let before = fingerprints(dir);

    let run = lockaudit(dir, &["--write-baseline", "lockaudit-baseline.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run
        .stderr
        .contains("wrote 5 findings to lockaudit-baseline.json"));
    let baseline = json(&fs::read_to_string(dir.join("lockaudit-baseline.json")).unwrap());
    let entries = baseline["findings"].as_array().unwrap();
    assert_eq!(entries.len(), 5, "suppressed findings are not baselined");
    for e in entries {
        assert!(
            e.get("line").is_none(),
            "no line numbers in a baseline: {e}"
        );
    }

    let run = lockaudit(dir, &["--baseline", "lockaudit-baseline.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .ends_with("\nno findings; 6 files audited; 3 suppressed, 5 in the baseline\n"),
        "{}",
        run.stdout
    );

    // Unrelated edits move every finding to another line.
    edit(&dir.join("src/report.rs"), |t| {
        format!("// Reports.\n\n/// Nothing to lock here.\npub fn version() -> u32 {{\n    3\n}}\n\n{t}")
    });
    edit(&dir.join("src/jobs/mod.rs"), |t| {
        t.replace(
            "use redis::Commands;\n",
            "use redis::Commands;\n\n\n// Background jobs.\n",
        )
    });
    edit(&dir.join("src/broken.rs"), |t| format!("\n\n{t}"));
    assert_eq!(
        fingerprints(dir),
        before,
        "fingerprints survive moved lines"
    );
    let run = lockaudit(dir, &["--baseline", "lockaudit-baseline.json"]);
    assert_eq!(run.code, 0, "{run:?}");

    // A new finding is reported, and only it.
    edit(&dir.join("src/report.rs"), |t| {
        t + "\npub fn yearly(con: &mut redis::Connection, token: &str) -> redis::RedisResult<bool> {\n    let reply: Option<String> = redis::cmd(\"SET\").arg(\"report:yearly:lock\").arg(token).arg(\"NX\").arg(\"PX\").arg(60_000).query(con)?;\n    Ok(reply.is_some())\n}\n"
    });
    let run = lockaudit(
        dir,
        &["--baseline", "lockaudit-baseline.json", "--format", "short"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout,
        "src/report.rs:47:33: error[missing-purpose]: lock acquisition of `\"report:yearly:lock\"` has no `lock-purpose:` annotation\n\
         1 finding (1 error) in 1 file; 6 files audited; 3 suppressed, 5 in the baseline\n"
    );

    // A fixed finding leaves a stale baseline entry, counted and named.
    edit(&dir.join("src/report.rs"), |t| {
        t.replace("lock-purpose: eficiency", "lock-purpose: efficiency")
    });
    let run = lockaudit(
        dir,
        &[
            "--baseline",
            "lockaudit-baseline.json",
            "--fail-on",
            "never",
            "--color",
            "never",
        ],
    );
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains(
            "note: stale baseline entry: unknown-purpose in src/report.rs no longer occurs (unknown lock purpose `eficiency`)\n"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.ends_with(
        "1 finding (1 error) in 1 file; 6 files audited; 3 suppressed, 4 in the baseline, 1 stale baseline entry\n"
    ));
    let short = lockaudit(
        dir,
        &["--baseline", "lockaudit-baseline.json", "--format", "short"],
    );
    assert!(short
        .stdout
        .ends_with("4 in the baseline, 1 stale baseline entry\n"));
    let report = json(
        &lockaudit(
            dir,
            &["--baseline", "lockaudit-baseline.json", "--format", "json"],
        )
        .stdout,
    );
    let summary = &report["summary"];
    assert_eq!(summary["baselined"], 4);
    assert_eq!(summary["stale_baseline"], 1);
    assert_eq!(
        summary["stale_baseline_entries"][0]["check"],
        "unknown-purpose"
    );
    assert_eq!(
        summary["stale_baseline_entries"][0]["path"],
        "src/report.rs"
    );
}

#[test]
fn a_baseline_that_is_not_one_exits_2() {
    let tmp = copy_project("annotated");
    fs::write(tmp.path().join("b.json"), "{\"findings\": 3}").unwrap();
    let run = lockaudit(tmp.path(), &["--baseline", "b.json"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("b.json: not a lockaudit baseline"),
        "{}",
        run.stderr
    );
}

// ---- --new-since ----------------------------------------------------------

use common::git;

const OLD_JOB: &str = "pub fn old_job(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<bool> {\n    let reply: Option<String> = redis::cmd(\"SET\").arg(lock_key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(5_000).query(con)?;\n    Ok(reply.is_some())\n}\n";
const NEW_JOB: &str = "pub fn new_job(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<bool> {\n    let reply: Option<String> = redis::cmd(\"SET\").arg(lock_key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(5_000).query(con)?;\n    Ok(reply.is_some())\n}\n";

#[test]
fn new_since_reports_only_findings_absent_at_the_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/jobs.rs"), OLD_JOB).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "base"]);

    // Unchanged: the old finding is not new.
    let run = lockaudit(dir, &["--new-since", "HEAD"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "no findings; 1 file audited; 1 already present at the base revision\n"
    );

    // Move the old finding, add a new one (uncommitted, in the work tree).
    fs::write(
        dir.join("src/jobs.rs"),
        format!("// Jobs.\n\n{NEW_JOB}\n{OLD_JOB}"),
    )
    .unwrap();
    let run = lockaudit(dir, &["--new-since", "HEAD", "--format", "short"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout,
        "src/jobs.rs:4:33: error[missing-purpose]: lock acquisition of `lock_key` has no `lock-purpose:` annotation\n\
         1 finding (1 error) in 1 file; 1 file audited; 1 already present at the base revision\n"
    );

    // The same from a subdirectory, where paths are relative to it.
    let run = lockaudit(
        &dir.join("src"),
        &["--new-since", "HEAD", "--format", "short", "."],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .starts_with("jobs.rs:4:33: error[missing-purpose]"),
        "{}",
        run.stdout
    );

    // Once committed, nothing is new relative to HEAD, but HEAD~1 still sees it.
    git(dir, &["commit", "-q", "-am", "new job"]);
    assert_eq!(lockaudit(dir, &["--new-since", "HEAD"]).code, 0);
    assert_eq!(lockaudit(dir, &["--new-since", "HEAD~1"]).code, 1);

    // The work tree was never touched.
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");

    let run = lockaudit(dir, &["--new-since", "no-such-ref"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("`no-such-ref` is not a git revision"),
        "{}",
        run.stderr
    );
}

/// The base revision is judged by the same engine and crate passes as the
/// work tree: a finding that needs another file of the crate (here, a
/// helper outside the paths asked for) is found at the base too, so an
/// unchanged tree has nothing new.
#[test]
fn new_since_judges_the_base_with_the_crate_passes() {
    let tmp = copy_project("fenced-crate");
    let dir = tmp.path();
    let wrapped = copy_project("wrapped");
    fs::create_dir_all(dir.join("wrapped")).unwrap();
    for sub in ["Cargo.toml", "src"] {
        let from = wrapped.path().join(sub);
        if from.is_dir() {
            fs::create_dir_all(dir.join("wrapped").join(sub)).unwrap();
            for e in fs::read_dir(&from).unwrap() {
                let e = e.unwrap();
                fs::copy(e.path(), dir.join("wrapped").join(sub).join(e.file_name())).unwrap();
            }
        } else {
            fs::copy(&from, dir.join("wrapped").join(sub)).unwrap();
        }
    }
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "base"]);
    let args = [
        "check",
        "--format",
        "short",
        "src/lib.rs",
        "wrapped/src/jobs.rs",
    ];
    let now = lockaudit(dir, &args);
    assert!(
        now.stdout
            .contains("src/lib.rs:17:23: error[unfenced-correctness-lock]"),
        "{now:?}"
    );
    assert!(
        now.stdout
            .contains("wrapped/src/jobs.rs:25:13: error[ignored-acquire-result]"),
        "{now:?}"
    );
    let mut since = args.to_vec();
    since.extend(["--new-since", "HEAD"]);
    let run = lockaudit(dir, &since);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("no findings;"), "{run:?}");
}

// ---- init -----------------------------------------------------------------

#[test]
fn init_writes_a_commented_config_with_every_key_that_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run = lockaudit(dir, &["init"]);
    assert_eq!(run.code, 0, "{run:?}");
    let path = dir.join("lockaudit.yaml");
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for key in [
        "rules",
        "checks",
        "exclude",
        "lock-name-pattern",
        "default-purpose",
    ] {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("{key}:")))
            .unwrap_or_else(|| panic!("`{key}` is missing:\n{text}"));
        assert!(
            at > 0 && lines[at - 1].starts_with('#'),
            "`{key}` has a comment above it"
        );
    }

    // Every check is listed with its default severity.
    let checks = json(&lockaudit(dir, &["rules", "--format", "json"]).stdout);
    for c in checks.as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        let severity = c["severity"].as_str().unwrap();
        assert!(
            lines.iter().any(|l| l.starts_with("#   ")
                && l.contains(&format!("{id}:"))
                && l.ends_with(severity)),
            "`{id}` is not listed:\n{text}"
        );
    }

    // It loads, and it changes nothing from the defaults.
    let settings = lockaudit::config::load(&path, "lockaudit.yaml").expect("the starter loads");
    assert!(settings.rules.is_empty() && settings.exclude.is_empty());
    assert!(settings.checks.is_empty());
    assert_eq!(
        settings.lock_name.as_str(),
        lockaudit::config::DEFAULT_LOCK_NAME_PATTERN
    );
    assert_eq!(settings.default_purpose, None);

    // The binary discovers and accepts it.
    copy_dir(&project("annotated").join("src"), &dir.join("src"));
    let run = lockaudit(dir, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = lockaudit(dir, &["--config", "lockaudit.yaml"]);
    assert_eq!(run.code, 0, "{run:?}");

    // It never overwrites without --force.
    fs::write(&path, "checks: {}\n").unwrap();
    let run = lockaudit(dir, &["init"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("already exists"));
    assert_eq!(fs::read_to_string(&path).unwrap(), "checks: {}\n");
    assert_eq!(lockaudit(dir, &["init", "--force"]).code, 0);
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}

/// `init` says test code is audited and how to leave it out;
/// `init --exclude-tests` writes the excludes that do, and a run with that
/// config reports only the locks outside test code.
#[test]
fn init_offers_to_leave_test_code_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run = lockaudit(dir, &["init"]);
    assert!(run.stderr.contains("--exclude-tests"), "{run:?}");
    let run = lockaudit(dir, &["init", "--force", "--exclude-tests"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stderr.contains("test code is audited"), "{run:?}");
    let path = dir.join("lockaudit.yaml");
    let settings = lockaudit::config::load(&path, "lockaudit.yaml").expect("it loads");
    assert!(settings.exclude_cfg_test);
    for glob in ["**/tests/**", "**/*_test.rs", "**/tests.rs", "#[cfg(test)]"] {
        assert!(settings.exclude.iter().any(|g| g == glob), "{glob}");
    }

    // The code of the marked project, and test files the globs leave out.
    copy_dir(&project("tests-excluded").join("src"), &dir.join("src"));
    let test_file = "async fn takes(con: &mut redis::aio::MultiplexedConnection) {\n    let _r: Option<String> = redis::cmd(\"SET\").arg(\"lock:t\").arg(\"x\").arg(\"NX\").arg(\"PX\").arg(100).query_async(con).await.unwrap();\n}\n";
    fs::write(dir.join("src/tests.rs"), test_file).unwrap();
    fs::create_dir_all(dir.join("tests")).unwrap();
    fs::write(dir.join("tests/integration.rs"), test_file).unwrap();
    fs::write(dir.join("src/queue_test.rs"), test_file).unwrap();
    let run = lockaudit(dir, &["--format", "json", "."]);
    assert_eq!(run.code, 1, "{run:?}");
    let found = json(&run.stdout);
    let keys: Vec<&str> = found["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys
        .iter()
        .all(|m| m.contains("lock:jobs") || m.contains("lock:prod")));

    // The same from the command line, without the config.
    fs::remove_file(&path).unwrap();
    let run = lockaudit(
        dir,
        &[
            "--format",
            "json",
            "--exclude",
            "#[cfg(test)]",
            "src/lib.rs",
        ],
    );
    assert_eq!(
        json(&run.stdout)["findings"].as_array().unwrap().len(),
        2,
        "{run:?}"
    );

    // Without the exclusion every lock of the test code is reported.
    let run = lockaudit(dir, &["--format", "json", "."]);
    let missing = json(&run.stdout)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "missing-purpose")
        .count();
    assert_eq!(missing, 8, "{run:?}");
}

/// Fingerprints name files by their repository path, so a baseline written
/// at the repository root matches when lockaudit runs from a subdirectory.
#[test]
fn baseline_matches_from_any_directory_of_the_repository() {
    let tmp = copy_project("mixed");
    let dir = tmp.path();
    git(dir, &["init", "-q"]);
    let run = lockaudit(dir, &["--write-baseline", "baseline.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = lockaudit(&dir.join("src"), &["--baseline", "../baseline.json", "."]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("in the baseline"), "{}", run.stdout);
    assert!(!run.stdout.contains("stale"), "{}", run.stdout);
}

/// A file named on the command line is audited even if excluded, unless
/// `--force-exclude` (what the pre-commit hook passes).
#[test]
fn force_exclude_applies_excludes_to_named_files() {
    let tmp = copy_project("unannotated");
    let dir = tmp.path();
    fs::write(dir.join("lockaudit.yaml"), "exclude:\n  - \"src/**\"\n").unwrap();
    let file = fs::read_dir(dir.join("src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "rs"))
        .unwrap();
    let rel = file
        .strip_prefix(dir)
        .unwrap()
        .to_string_lossy()
        .to_string();
    let run = lockaudit(dir, &["check", &rel]);
    assert_eq!(run.code, 1, "a named file is audited: {run:?}");
    let run = lockaudit(dir, &["check", "--force-exclude", &rel]);
    assert_eq!(run.code, 0, "--force-exclude skips it: {run:?}");
    let run = lockaudit(dir, &["check", "."]);
    assert_eq!(run.code, 0, "walking skips excluded files: {run:?}");
}

// ---- suggested fixes and --fix ---------------------------------

/// The findings of a JSON report: (path, line, check, fix).
fn by_line(report: &Value) -> Vec<(String, u64, String, Option<Value>)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            // Paths are relative to the repository root: keep `src/…`.
            let path = f["path"].as_str().unwrap();
            (
                path[path.rfind("src/").unwrap()..].to_string(),
                f["line"].as_u64().unwrap(),
                f["check"].as_str().unwrap().to_string(),
                f.get("fix").cloned(),
            )
        })
        .collect()
}

const UNLOCK: &str = r##"redis::Script::new(r#"if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end"#)"##;

#[test]
fn json_carries_a_fix_only_where_the_replacement_is_exact() {
    // A copy outside this repository: paths are relative to its own root.
    let tmp = copy_project("fixable");
    let run = lockaudit(tmp.path(), &["--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let report = json(&run.stdout);
    let findings = by_line(&report);
    let checks: Vec<(u64, &str, bool)> = findings
        .iter()
        .filter(|(p, ..)| p == "src/lib.rs")
        .map(|(_, l, c, f)| (*l, c.as_str(), f.is_some()))
        .collect();
    assert_eq!(
        checks,
        [
            (20, "unowned-release", true),
            (29, "lock-without-expiry", true),
            (36, "unowned-release", true),
            // The token was moved into the SET: `&token` would not compile.
            (53, "unowned-release", false),
            // Two TTLs in scope (`LOCK_TTL_MS`, `lease_secs`): no guess.
            (61, "lock-without-expiry", false),
            // Released in a spawned task that would capture the token.
            (84, "unowned-release", false),
        ]
    );
    let edit = |i: usize| findings[i].3.as_ref().unwrap()["edits"][0].clone();
    // A DEL of a `&mut redis::Connection`: the script takes the connection as is.
    let del = edit(0);
    assert_eq!(
        (
            del["line"].as_u64(),
            del["column"].as_u64(),
            del["end_column"].as_u64()
        ),
        (Some(20), Some(22), Some(39))
    );
    assert_eq!(
        del["replacement"],
        format!("{UNLOCK}.key(lock_key).arg(&token).invoke(con)")
    );
    assert_eq!(del["path"], "src/lib.rs");
    // The TTL constant is in milliseconds: `PX`, inserted right after `NX`.
    let ttl = edit(1);
    assert_eq!(
        (ttl["line"].as_u64(), ttl["column"].as_u64()),
        (ttl["end_line"].as_u64(), ttl["end_column"].as_u64())
    );
    assert_eq!(ttl["replacement"], ".arg(\"PX\").arg(LOCK_TTL_MS)");
    // An awaited `cmd("DEL")…query_async::<()>(&mut con)` keeps its
    // connection argument and turbofish.
    assert_eq!(
        edit(2)["replacement"],
        format!("{UNLOCK}.key(\"compact:lock\").arg(token).invoke_async::<()>(&mut con)")
    );
    // Findings without a fix have no `fix` key at all.
    let raw = &report["findings"][3];
    assert!(raw.get("fix").is_none(), "{raw}");

    // A `Duration` TTL, seconds in a name, an owned connection; `set_nx`
    // cannot carry an expiry, so it gets no fix.
    let more: Vec<(u64, &str, Option<&str>)> = findings
        .iter()
        .filter(|(p, ..)| p == "src/more.rs")
        .map(|(_, l, c, f)| {
            let r = f
                .as_ref()
                .map(|f| f["edits"][0]["replacement"].as_str().unwrap());
            (*l, c.as_str(), r)
        })
        .collect();
    let owned = format!("{UNLOCK}.key(\"cleanup:lock\").arg(&token).invoke(&mut con)");
    assert_eq!(
        more,
        [
            (
                10,
                "lock-without-expiry",
                Some(".arg(\"PX\").arg(lock_ttl.as_millis() as u64)")
            ),
            (
                17,
                "lock-without-expiry",
                Some(".arg(\"EX\").arg(lease_secs)")
            ),
            (27, "lock-without-expiry", None),
            (29, "unowned-release", Some(owned.as_str())),
        ]
    );
}

#[test]
fn sarif_fixes_are_schema_valid_artifact_changes() {
    let tmp = copy_project("fixable");
    let run = lockaudit(tmp.path(), &["--format", "sarif"]);
    let log = json(&run.stdout);
    assert_github_ready(&log);
    let results = log["runs"][0]["results"].as_array().unwrap();
    let with_fix: Vec<&Value> = results
        .iter()
        .filter(|r| r.get("fixes").is_some())
        .collect();
    assert_eq!(with_fix.len(), 6);
    let change = &with_fix[1]["fixes"][0]["artifactChanges"][0];
    assert_eq!(change["artifactLocation"]["uri"], "src/lib.rs");
    assert_eq!(change["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    let r = &change["replacements"][0];
    // An insertion deletes the empty region where it goes.
    assert_eq!(r["deletedRegion"]["startLine"], 32);
    assert_eq!(
        r["deletedRegion"]["startColumn"],
        r["deletedRegion"]["endColumn"]
    );
    assert_eq!(
        r["insertedContent"]["text"],
        ".arg(\"PX\").arg(LOCK_TTL_MS)"
    );
    assert!(with_fix[1]["fixes"][0]["description"]["text"]
        .as_str()
        .unwrap()
        .starts_with("Set the expiry"));
}

#[test]
fn check_fix_applies_the_exact_fixes_and_reports_what_remains() {
    let tmp = copy_project("fixable");
    let dir = tmp.path();
    let before = fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    let run = lockaudit(dir, &["check", "--fix", "--format", "short"]);
    assert_eq!(run.code, 1, "four findings have no exact fix: {run:?}");
    assert!(
        run.stderr.contains("applied 6 fixes in 2 files"),
        "{}",
        run.stderr
    );
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", run.stdout);
    assert!(
        lines[0].starts_with("src/lib.rs:53:26: error[unowned-release]"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("src/lib.rs:61:31: error[lock-without-expiry]"),
        "{}",
        lines[1]
    );
    let after = fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    assert!(after.contains(&format!(
        "let _: i32 = {UNLOCK}.key(lock_key).arg(&token).invoke(con)?;"
    )));
    assert!(after.contains(
        "        .arg(\"NX\").arg(\"PX\").arg(LOCK_TTL_MS)\n        .query_async(&mut con)"
    ));
    assert_eq!(after.lines().count(), before.lines().count());
    // Nothing else changed: the diff is exactly three lines.
    let changed = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(changed, 3);

    // A second run has nothing left to fix and changes nothing.
    let again = lockaudit(dir, &["check", "--fix", "--format", "short"]);
    assert!(
        again.stderr.contains("applied 0 fixes in 0 files"),
        "{}",
        again.stderr
    );
    assert_eq!(fs::read_to_string(dir.join("src/lib.rs")).unwrap(), after);
    assert_eq!(again.stdout, run.stdout);
}

/// The audit after the fixes is of the crates they changed: what the
/// first audit said of the files it skipped is not said twice.
#[test]
fn check_fix_gives_each_note_once() {
    let tmp = copy_project("fixable");
    fs::write(
        tmp.path().join("src/generated.rs"),
        "// @generated by a tool\npub fn f() {}\n",
    )
    .unwrap();
    let run = lockaudit(tmp.path(), &["check", "--fix", "--format", "short"]);
    assert!(
        run.stderr.contains("applied 6 fixes in 2 files"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("note: skipped 1 generated file").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn check_fix_keeps_a_byte_order_mark_and_crlf_line_endings() {
    let tmp = copy_project("fixable");
    let file = tmp.path().join("src/lib.rs");
    let text = fs::read_to_string(&file).unwrap().replace('\n', "\r\n");
    fs::write(&file, format!("\u{feff}{text}")).unwrap();
    let run = lockaudit(tmp.path(), &["check", "--fix", "--quiet"]);
    assert_eq!(run.code, 1, "{run:?}");
    let after = fs::read_to_string(&file).unwrap();
    assert!(after.starts_with('\u{feff}'));
    assert!(
        !after.replace("\r\n", "").contains('\n'),
        "only CRLF line endings"
    );
    assert!(after.contains(".arg(\"NX\").arg(\"PX\").arg(LOCK_TTL_MS)\r\n"));
}

#[cfg(unix)]
#[test]
fn check_fix_never_writes_through_a_symlink() {
    let tmp = copy_project("fixable");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("lib.rs");
    fs::rename(tmp.path().join("src/lib.rs"), &target).unwrap();
    std::os::unix::fs::symlink(&target, tmp.path().join("src/lib.rs")).unwrap();
    let before = fs::read_to_string(&target).unwrap();
    let run = lockaudit(tmp.path(), &["check", "--fix", "src/lib.rs"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("src/lib.rs: not a regular file"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("applied 0 fixes"), "{}", run.stderr);
    assert_eq!(fs::read_to_string(&target).unwrap(), before);
    assert!(fs::symlink_metadata(tmp.path().join("src/lib.rs"))
        .unwrap()
        .file_type()
        .is_symlink());
}

/// With `default-purpose` set, the annotation that writes it down is an
/// exact fix in JSON; `check --fix` still leaves it to `annotate`.
#[test]
fn the_configured_default_purpose_is_offered_as_an_annotation_fix() {
    let tmp = copy_project("unannotated");
    let dir = tmp.path();
    let run = lockaudit(dir, &["--format", "json"]);
    let plain = json(&run.stdout);
    assert!(
        plain["findings"][0].get("fix").is_none(),
        "no purpose, no fix"
    );

    fs::write(dir.join("lockaudit.yaml"), "default-purpose: efficiency\n").unwrap();
    let run = lockaudit(dir, &["--format", "json"]);
    let report = json(&run.stdout);
    let f = &report["findings"][0];
    assert_eq!(f["check"], "missing-purpose");
    let e = &f["fix"]["edits"][0];
    assert_eq!(
        (e["line"].as_u64(), e["column"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (e["end_line"].as_u64(), e["end_column"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        e["replacement"],
        "    // lock-purpose: efficiency — TODO: why\n"
    );
    let before = fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    let run = lockaudit(dir, &["check", "--fix"]);
    assert!(run.stderr.contains("applied 0 fixes"), "{}", run.stderr);
    assert_eq!(fs::read_to_string(dir.join("src/lib.rs")).unwrap(), before);
}

// ---- annotate --------------------------------------------------

/// A crate with acquisitions in several shapes: nested and tab-indented,
/// under an attribute, already annotated, suppressed, and a CRLF file.
fn annotate_project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(
        src.join("lib.rs"),
        "pub fn a(con: &mut redis::Connection, t: &str) -> redis::RedisResult<()> {
    if true {
        for _ in 0..2 {
            let _r: Option<String> = redis::cmd(\"SET\").arg(\"a:lock\").arg(t).arg(\"NX\").arg(\"PX\").arg(10).query(con)?;
        }
    }
    #[allow(unused)]
    let _s: Option<String> = redis::cmd(\"SET\").arg(\"b:lock\").arg(t).arg(\"NX\").arg(\"PX\").arg(10).query(con)?;
    // lock-purpose: correctness — decided already
    let _u: Option<String> = redis::cmd(\"SET\").arg(\"c:lock\").arg(t).arg(\"NX\").arg(\"PX\").arg(10).query(con)?;
    // lockaudit: allow(missing-purpose) generated code, annotated upstream
    let _v: Option<String> = redis::cmd(\"SET\").arg(\"d:lock\").arg(t).arg(\"NX\").arg(\"PX\").arg(10).query(con)?;
    Ok(())
}
",
    )
    .unwrap();
    fs::write(
        src.join("crlf.rs"),
        "pub fn b(con: &mut redis::Connection, t: &str) -> bool {\r\n\tlet r: Option<String> = redis::cmd(\"SET\").arg(\"e:lock\").arg(t).arg(\"NX\").arg(\"PX\").arg(10).query(con).unwrap();\r\n\tr.is_some()\r\n}\r\n",
    )
    .unwrap();
    tmp
}

#[test]
fn annotate_prints_a_unified_diff_that_applies() {
    let tmp = annotate_project();
    let dir = tmp.path();
    let run = lockaudit(dir, &["annotate", ".", "--purpose", "efficiency"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("3 acquisitions in 2 files would be annotated as `efficiency`"),
        "{}",
        run.stderr
    );
    let diff = &run.stdout;
    assert!(
        diff.starts_with("--- a/src/crlf.rs\n+++ b/src/crlf.rs\n"),
        "{diff}"
    );
    assert!(
        diff.contains("\n+\t// lock-purpose: efficiency — TODO: why\r\n"),
        "{diff}"
    );
    assert!(
        diff.contains("\n+            // lock-purpose: efficiency — TODO: why\n"),
        "{diff}"
    );
    // Between the attribute and the statement: still the block above it.
    assert!(
        diff.contains(
            "     #[allow(unused)]\n+    // lock-purpose: efficiency — TODO: why\n     let _s"
        ),
        "{diff}"
    );
    let added = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"));
    assert_eq!(added.count(), 3, "{diff}");
    // Nothing was written.
    assert!(!fs::read_to_string(dir.join("src/lib.rs"))
        .unwrap()
        .contains("TODO"));

    // The diff is a real patch: applying it gives what --write writes.
    let applied = annotate_project();
    fs::write(applied.path().join("annotate.diff"), diff).unwrap();
    git(applied.path(), &["init", "-q"]);
    git(applied.path(), &["apply", "annotate.diff"]);
    let run = lockaudit(
        dir,
        &["annotate", ".", "--purpose", "efficiency", "--write"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    for f in ["src/lib.rs", "src/crlf.rs"] {
        assert_eq!(
            fs::read(applied.path().join(f)).unwrap(),
            fs::read(dir.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn annotate_write_is_idempotent_and_leaves_no_missing_purpose() {
    let tmp = annotate_project();
    let dir = tmp.path();
    // Turned off in the config: annotate still finds the acquisitions.
    fs::write(
        dir.join("lockaudit.yaml"),
        "checks:\n  missing-purpose: off\n",
    )
    .unwrap();
    let run = lockaudit(
        dir,
        &["annotate", "src", "--purpose", "correctness", "--write"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("annotated 3 acquisitions in 2 files as `correctness`"),
        "{}",
        run.stderr
    );
    let crlf = fs::read_to_string(dir.join("src/crlf.rs")).unwrap();
    assert!(
        crlf.contains("{\r\n\t// lock-purpose: correctness — TODO: why\r\n\tlet r"),
        "{crlf:?}"
    );
    assert!(!crlf.replace("\r\n", "").contains('\n'));
    let lib = fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    let written = lib.clone();

    let again = lockaudit(
        dir,
        &["annotate", "src", "--purpose", "correctness", "--write"],
    );
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again
            .stderr
            .contains("every acquisition already has a purpose"),
        "{}",
        again.stderr
    );
    let diff = lockaudit(dir, &["annotate", "src", "--purpose", "efficiency"]);
    assert_eq!(diff.stdout, "", "nothing left to annotate");
    assert_eq!(fs::read_to_string(dir.join("src/lib.rs")).unwrap(), written);

    fs::remove_file(dir.join("lockaudit.yaml")).unwrap();
    let check = lockaudit(dir, &["check", ".", "--format", "json"]);
    let report = json(&check.stdout);
    let checks: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["suppressed"] == false)
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert!(!checks.contains(&"missing-purpose"), "{checks:?}");
    assert!(!checks.contains(&"unknown-purpose"), "{checks:?}");
}

#[test]
fn annotate_needs_a_purpose() {
    let run = lockaudit(&project("unannotated"), &["annotate", "."]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--purpose"), "{}", run.stderr);
}

/// Inside a lock crate's own source (its `Cargo.toml`
/// names a pack crate) the crate is the evidence, since it never imports
/// itself; a call on the crate's own type is that type's method, so its
/// layers are one lock, reported at the command that takes it, naming the
/// outermost call. The same stub code in a crate of another name is
/// nothing.
#[test]
fn a_lock_crates_own_source_is_evidence_for_it() {
    let run = lockaudit(&project("lock-crate"), &["check", "--format", "short", "."]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("src/lib.rs:16:37: error[missing-purpose]: lock acquisition of `resource`"),
        "{run:?}"
    );
    assert_eq!(run.stdout.matches("error[").count(), 1, "{run:?}");
    let human = lockaudit(&project("lock-crate"), &["check", "--color", "never", "."]);
    assert!(
        human
            .stdout
            .contains("no annotation on the way from 1 call site: src/lib.rs:33:17"),
        "{human:?}"
    );
    let twin = lockaudit(
        &project("lock-crate-user"),
        &["check", "--format", "short", "."],
    );
    assert_eq!(twin.code, 0, "{twin:?}");
    // The pre-filter lets the crate's files through, with the same result.
    let unfiltered = lockaudit(
        &project("lock-crate"),
        &["check", "--format", "short", "--no-prefilter", "."],
    );
    assert_eq!(unfiltered.stdout, run.stdout);
}

/// What a run finds does not depend on the directory it starts from: a
/// lock crate's own manifest is read when the crate is named by an
/// absolute path from elsewhere, inside a repository or in none.
#[test]
fn a_lock_crate_named_from_elsewhere_is_audited_the_same() {
    let krate = tempfile::tempdir().unwrap();
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"etcd-client\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", "mod client;\nmod lock;\npub use client::Client;\n"),
        (
            "src/client.rs",
            "use crate::lock::{LockClient, LockOptions, LockResponse};\n\
             pub struct Client { lock: LockClient }\n\
             impl Client {\n\
             \x20   pub async fn lock(&mut self, name: impl Into<Vec<u8>>, options: Option<LockOptions>) -> Result<LockResponse, String> {\n\
             \x20       self.lock.lock(name, options).await\n\
             \x20   }\n\
             }\n",
        ),
        (
            "src/lock.rs",
            "pub struct LockClient;\npub struct LockOptions;\npub struct LockResponse;\n\
             impl LockClient {\n\
             \x20   pub async fn lock(&mut self, _n: impl Into<Vec<u8>>, _o: Option<LockOptions>) -> Result<LockResponse, String> { Ok(LockResponse) }\n\
             }\n",
        ),
    ];
    for (name, text) in files {
        let path = krate.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let inside = lockaudit(krate.path(), &["check", "--format", "short", "."]);
    assert!(
        inside
            .stdout
            .contains("src/client.rs:5:19: error[missing-purpose]"),
        "{inside:?}"
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let abs = krate.path().to_str().unwrap();
    let afar = lockaudit(elsewhere.path(), &["check", "--format", "short", abs]);
    assert_eq!(
        afar.stdout.replace(&format!("{abs}/"), ""),
        inside.stdout,
        "{afar:?}"
    );
    // A directory of the crate named: its manifest is still the crate's.
    let src_inside = lockaudit(krate.path(), &["check", "--format", "short", "src"]);
    assert!(
        src_inside.stdout.contains("src/client.rs:5:19"),
        "{src_inside:?}"
    );
    let src = format!("{abs}/src");
    let src_afar = lockaudit(elsewhere.path(), &["check", "--format", "short", &src]);
    assert_eq!(
        src_afar.stdout.replace(&format!("{abs}/"), ""),
        src_inside.stdout,
        "{src_afar:?}"
    );
    // The same crate inside a repository, named from outside it.
    fs::create_dir(krate.path().join(".git")).unwrap();
    let in_repo = lockaudit(elsewhere.path(), &["check", "--format", "short", abs]);
    assert_eq!(in_repo.stdout, afar.stdout, "{in_repo:?}");
}

/// Correctness locks taken through the crate's own helpers.
/// The fencing token is followed out of an acquire helper that returns the
/// grant and into the effect helpers it is passed to; a helper that
/// returns only a flag keeps the token; `store::write` (or `write`
/// imported from `store`) is the one of `store.rs`, never the same-named
/// function of `backup.rs`, and `write` imported from `backup` is that
/// one; `ledger.apply(..)` on `ledger: &store::Ledger`, and
/// `Ledger::apply_plain(..)`, are that type's methods in `store.rs`.
///
/// The markers of the project are compared by `tests/projects.rs`.
#[test]
fn fencing_follows_the_token_through_helpers() {
    let r = lockaudit(
        &project("fenced-wrappers"),
        &["check", "--format", "short", "."],
    );
    assert!(
        r.stdout.contains(
            "src/service.rs:24:8: error[unfenced-correctness-lock]: correctness lock `\"ledger/3\"`: \
             the wrapper hands back only whether it was won"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("src/service.rs:16:16: error[unfenced-correctness-lock]: correctness lock `\"ledger/2\"`: 1 effect"),
        "{}",
        r.stdout
    );
}

/// Wrappers defined in one file of a crate and called in
/// another (acquire, release, renewal, an owner-checked release, a helper
/// returning an unexecuted `redis::Cmd`), SQL a constructor of another
/// file stores in a struct field, also a wrapper of a wrapper in a
/// third file. Every line marked
/// `//~ check-id` in the project is reported, and nothing else: not the
/// wrappers' inner calls, not a method of another type with the same name,
/// not a same-named function of another file.
///
/// The markers of the project are compared by `tests/projects.rs`.
#[test]
fn wrappers_in_other_files_of_the_crate_are_lock_sites() {
    let r = lockaudit(&project("wrapped"), &["check", "--format", "short", "."]);
    for expected in [
        // A wrapper's own defect stands at its lock call, once.
        "src/locks.rs:83:13: error[unowned-release]: lock `&self.key` is deleted",
        "src/locks.rs:97:31: error[missing-purpose]: lock acquisition of \
         `format!(\"lock:job:{job_id}\")` has no",
        // A wrapper that counts a failed call as won taints its callers.
        "src/upkeep.rs:56:9: error[ignored-acquire-result]: `.unwrap_or(true)` inside \
         `locks::acquire_lenient` treats a failure as success",
        // The owner value a release wrapper compares is the argument its
        // caller gives: a constant there blinds the check.
        "src/upkeep.rs:23:5: error[unowned-release]: lock `\"lock:sweep\"` is released by \
         comparing its value with the constant `\"sweeper\"`",
    ] {
        assert!(r.stdout.contains(expected), "{expected}\n{}", r.stdout);
    }
    // The findings at a lock call name the call sites that reach it, with
    // the key each gives: the receiver's field, the argument a key is
    // built from; a missing purpose names only the unannotated ones.
    let human = lockaudit(&project("wrapped"), &["check", "--color", "never", "."]);
    for expected in [
        "note: reached from 1 call site: src/jobs.rs:79:17 (`report_lock.key`)",
        "note: no annotation on the way from 1 call site: src/jobs.rs:86:5 (`next_job`)",
        "note: no annotation on the way from 4 call sites: src/jobs.rs:16:8",
    ] {
        assert!(
            human.stdout.contains(expected),
            "{expected}\n{}",
            human.stdout
        );
    }
    // Annotated calls of the same wrapper are not named.
    assert!(
        !human.stdout.contains("src/jobs.rs:8:9 ("),
        "{}",
        human.stdout
    );
    // SARIF links them as related locations, referenced from the message.
    let sarif = lockaudit(&project("wrapped"), &["check", "--format", "sarif", "."]);
    let sarif: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let at_lock = results
        .iter()
        .find(|r| {
            r["ruleId"] == "missing-purpose"
                && r["locations"][0]["physicalLocation"]["region"]["startLine"] == 10
        })
        .expect("missing-purpose at locks.rs:10");
    let related = at_lock["relatedLocations"].as_array().unwrap();
    assert_eq!(related.len(), 4, "{at_lock}");
    assert!(related
        .iter()
        .all(|l| l["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with(".rs")));
    assert!(
        at_lock["message"]["text"]
            .as_str()
            .unwrap()
            .contains("](1)"),
        "{at_lock}"
    );
}

/// Each finding once, where the fix goes. An annotation above a
/// wrapper `fn` (an etcd lock behind the team's type) or on the lock call
/// inside a helper covers the calls in every file; an unannotated helper's
/// missing purpose and missing expiry stand once at its lock call, naming
/// the calls that state no purpose; a correctness purpose stated in the
/// helper holds its callers to a fencing token, and its store's lack of
/// consensus is the lock call's own; an ignored reply stands at the call
/// that drops it; never `unattached-purpose` for an annotation on a
/// wrapper or its lock call.
#[test]
fn each_finding_stands_once_where_the_fix_goes() {
    // The markers of the project are compared by `tests/projects.rs`.
    let human = lockaudit(&project("chains"), &["check", "--color", "never", "."]);
    for expected in [
        "no annotation on the way from 2 call sites: src/report.rs:3:15 (`\"lock:nightly\"`), \
         src/worker.rs:14:8 (`\"lock:sweep\"`)",
        "the other 2 call sites that reach it are annotated",
        "reached from 4 call sites",
        "reached from 1 call site: src/billing.rs:5:8 (`\"lock:invoice:7\"`)",
    ] {
        let flat = human
            .stdout
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(flat.contains(expected), "{expected}\n{}", human.stdout);
    }
    // The calls through the annotated wrappers carry its purpose.
    let inv = lockaudit(&project("chains"), &["inventory", "--format", "json", "."]);
    let inv: serde_json::Value = serde_json::from_str(&inv.stdout).unwrap();
    let purpose = |file: &str, line: u64| {
        inv["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"].as_str().unwrap().ends_with(file) && r["line"] == line)
            .unwrap_or_else(|| panic!("no {file}:{line} in {inv}"))["purpose"]
            .clone()
    };
    assert_eq!(purpose("src/users.rs", 5), "efficiency");
    assert_eq!(purpose("src/poller.rs", 3), "efficiency");
    assert_eq!(purpose("src/billing.rs", 5), "correctness");
    assert_eq!(purpose("src/report.rs", 3), "missing");
}

/// `inventory` names the wrapper a lock is taken through,
/// every layer of it, next to the API that takes it.
#[test]
fn inventory_shows_the_wrappers_a_lock_is_taken_through() {
    let dir = project("wrapped");
    let r = lockaudit(&dir, &["inventory", "--format", "json", "."]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let rows: Vec<(u64, String, Option<String>)> = json["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["path"].as_str().unwrap().ends_with("src/jobs.rs"))
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["api"].as_str().unwrap().to_string(),
                r["wrapper"].as_str().map(str::to_string),
            )
        })
        .collect();
    let row = |line: u64| {
        rows.iter()
            .find(|r| r.0 == line)
            .unwrap_or_else(|| panic!("{rows:?}"))
    };
    assert_eq!(row(8).2.as_deref(), Some("locks::acquire_lock"));
    assert_eq!(row(38).2.as_deref(), Some("Locker::try_take"));
    assert_eq!(
        row(70).2.as_deref(),
        Some("service::claim_after → claim_job → locks::acquire_lock")
    );
    assert_eq!(row(70).1, "redis.set-nx");
    // One row per call site: the lock calls inside the called wrappers,
    // and the calls the wrappers of service.rs hand back, are no rows.
    let paths: Vec<(&str, u64)> = json["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["line"].as_u64().unwrap()))
        .collect();
    assert!(
        !paths
            .iter()
            .any(|(p, _)| p.ends_with("src/locks.rs") || p.ends_with("src/service.rs")),
        "{paths:?}"
    );
    // The owner value a wrapper stores is the argument its caller gives;
    // a release that compares a constant is no owner check.
    let upkeep = |line: u64| {
        json["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"].as_str().unwrap().ends_with("src/upkeep.rs") && r["line"] == line)
            .unwrap_or_else(|| panic!("no upkeep.rs:{line} in {}", r.stdout))
            .clone()
    };
    assert_eq!(upkeep(8)["owner"], "me");
    assert_eq!(upkeep(8)["release"], "owner-checked");
    assert_eq!(upkeep(20)["owner"], "\"sweeper\"");
    assert_eq!(upkeep(20)["release"], "unowned (constant \"sweeper\")");
    let table = lockaudit(&dir, &["inventory", "."]);
    assert!(
        table.stdout.contains("wrapper locks::acquire_lock"),
        "{}",
        table.stdout
    );
}

/// Sources copied without their manifests (or a monorepo built by Bazel)
/// still have crates: a directory laid out as one (`src/lib.rs`) is a
/// crate. Two services that each keep a copy of the same Redis helper are
/// two crates, each caller reaching its own copy, exactly as with their
/// `Cargo.toml`s; taken as one crate, the name would be defined twice and
/// followed nowhere, and both dropped results would go unreported.
#[test]
fn crates_without_manifests_are_found_by_their_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let helper = "/// lock-purpose: efficiency — one worker runs the job; a second run only wastes work.\n\
                  pub fn acquire_lock(con: &mut redis::Connection, key: &str, me: &str) -> bool {\n    \
                  redis::cmd(\"SET\").arg(key).arg(me).arg(\"NX\").arg(\"PX\").arg(30_000)\n        \
                  .query::<Option<String>>(con).map(|r| r.is_some()).unwrap_or(false)\n}\n";
    for service in ["billing", "mailer"] {
        let src = tmp.path().join(service).join("src");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("lib.rs"), "mod jobs;\nmod locks;\n").unwrap();
        fs::write(src.join("locks.rs"), helper).unwrap();
        let jobs = format!(
            "use crate::locks;\n\npub fn run(con: &mut redis::Connection) {{\n    \
             locks::acquire_lock(con, \"lock:{service}\", \"worker-1\");\n}}\n"
        );
        fs::write(src.join("jobs.rs"), jobs).unwrap();
    }
    let findings = |dir: &Path| -> BTreeSet<(String, u64, String)> {
        let run = lockaudit(dir, &["check", "--format", "json", "."]);
        assert_eq!(run.code, 1, "{run:?}");
        json(&run.stdout)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_string(),
                    f["line"].as_u64().unwrap(),
                    f["check"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let expected: BTreeSet<(String, u64, String)> = ["billing", "mailer"]
        .iter()
        .map(|s| {
            (
                format!("{s}/src/jobs.rs"),
                4,
                "ignored-acquire-result".to_string(),
            )
        })
        .collect();
    assert_eq!(findings(tmp.path()), expected);
    for service in ["billing", "mailer"] {
        let manifest = format!("[package]\nname = \"{service}\"\nversion = \"0.1.0\"\n");
        fs::write(tmp.path().join(service).join("Cargo.toml"), manifest).unwrap();
    }
    assert_eq!(findings(tmp.path()), expected);
}

/// A config's facts about its deployment's backends override the packs':
/// a Redis said to decide by consensus takes correctness locks without
/// `non-consensus-correctness-lock`, an etcd said not to gets it, naming
/// the config's place and reason; `inventory` shows where each fact came
/// from.
#[test]
fn backend_facts_in_the_config_decide_consensus() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(
        dir.join("src/lib.rs"),
        "// lock-purpose: correctness — one settlement per account\n\
         async fn settle(con: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<()> {\n    \
         let won: Option<String> = redis::cmd(\"SET\").arg(\"lock:settle\").arg(\"me\").arg(\"NX\").arg(\"PX\").arg(30_000).query_async(con).await?;\n    \
         if won.is_none() {\n        return Ok(());\n    }\n    Ok(())\n}\n\n\
         async fn compact(client: &mut etcd_client::Client) -> Result<(), etcd_client::Error> {\n    \
         // lock-purpose: correctness — one compaction at a time\n    \
         let lock = client.lock(\"compactor\", None).await?;\n    let _ = lock;\n    Ok(())\n}\n",
    )
    .unwrap();
    let checks = |dir: &Path| -> Vec<(u64, String, String)> {
        let run = lockaudit(
            dir,
            &[
                "check",
                "--select",
                "non-consensus-correctness-lock",
                "--format",
                "json",
                ".",
            ],
        );
        json(&run.stdout)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["line"].as_u64().unwrap(),
                    f["backend"].as_str().unwrap().to_string(),
                    f["message"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    // The packs' facts: Redis has no consensus, etcd has.
    let before = checks(dir);
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!((before[0].0, before[0].1.as_str()), (3, "redis"));
    fs::write(
        dir.join("lockaudit.yaml"),
        "backends:\n  redis:\n    consensus: true\n    reason: \"MemoryDB commits every write to a multi-AZ log\"\n  etcd:\n    consensus: false\n    reason: \"staging runs one etcd node\"\n",
    )
    .unwrap();
    let after = checks(dir);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!((after[0].0, after[0].1.as_str()), (12, "etcd"));
    assert!(
        after[0]
            .2
            .contains("(lockaudit.yaml:6:5: staging runs one etcd node)"),
        "{}",
        after[0].2
    );
    let inv = lockaudit(dir, &["inventory", "--format", "json", "."]);
    let locks = json(&inv.stdout)["locks"].as_array().unwrap().clone();
    let fact = |backend: &str| {
        let l = locks.iter().find(|l| l["backend"] == backend).unwrap();
        (
            l["consensus"].as_bool().unwrap(),
            l["consensus_source"].as_str().map(str::to_string),
        )
    };
    assert_eq!(
        fact("redis"),
        (
            true,
            Some("lockaudit.yaml:3:5: MemoryDB commits every write to a multi-AZ log".into())
        )
    );
    assert_eq!(
        fact("etcd"),
        (
            false,
            Some("lockaudit.yaml:6:5: staging runs one etcd node".into())
        )
    );
}

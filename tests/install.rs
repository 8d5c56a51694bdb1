//! Installing and pinning: the GitHub Action's script run locally against
//! the fixtures (the built binary instead of a download, or its own source
//! built when no release exists), `cargo lockaudit`, a mistyped
//! subcommand, the README and the book offering only what works before a
//! release, and the release asset names the release workflow builds.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cargo_lockaudit, copy_dir, lockaudit};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn version() -> String {
    read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml has a version")
        .to_string()
}

/// Runs scripts/action.sh as the action does, with LOCKAUDIT_BIN standing
/// in for the download; returns (script exit code, stdout, outputs).
#[cfg(unix)]
fn run_action(dir: &Path, envs: &[(&str, &str)]) -> (i32, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let outputs = tmp.path().join("outputs");
    fs::write(&outputs, "").unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/action.sh"))
        .current_dir(dir)
        .env("LOCKAUDIT_BIN", common::bin())
        .env("INPUT_VERSION", version())
        .env("RUNNER_TEMP", tmp.path())
        .env("GITHUB_OUTPUT", &outputs)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_BASE_REF")
        .env_remove("INPUT_NEW_SINCE")
        .env_remove("INPUT_ARGS");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    let outputs_text = fs::read_to_string(&outputs).unwrap();
    let sarif = outputs_text
        .lines()
        .find_map(|l| l.strip_prefix("sarif-file="))
        .map(|p| fs::read_to_string(p).expect("the SARIF file exists"));
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        format!("{outputs_text}{}", sarif.unwrap_or_default()),
    )
}

/// A copy of a fixture project outside any repository, so that paths in
/// the annotations are from the project's own root.
#[cfg(unix)]
fn copy_project(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&common::project(name), tmp.path());
    tmp
}

#[cfg(unix)]
#[test]
fn the_action_script_reports_findings_through_its_exit_code_output() {
    let unannotated = copy_project("unannotated");
    let annotated = copy_project("annotated");
    let (code, stdout, outputs) = run_action(
        unannotated.path(),
        &[("INPUT_PATHS", "src"), ("INPUT_SARIF", "true")],
    );
    assert_eq!(code, 0, "the script itself succeeds:\n{stdout}");
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
    assert!(
        stdout.contains("::error file=src/lib.rs,line=2,"),
        "{stdout}"
    );
    assert!(outputs.contains("sarif-file="), "{outputs}");
    assert!(
        outputs.contains("\"ruleId\": \"missing-purpose\""),
        "{outputs}"
    );

    let (code, stdout, outputs) = run_action(
        annotated.path(),
        &[("INPUT_PATHS", "."), ("INPUT_SARIF", "false")],
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
    assert!(!outputs.contains("sarif-file="), "{outputs}");

    // `inventory: true`: the locks as a Markdown table in the job summary,
    // beside the findings.
    let summary = tempfile::NamedTempFile::new().unwrap();
    let path = summary.path().to_str().unwrap();
    let (code, stdout, outputs) = run_action(
        unannotated.path(),
        &[
            ("INPUT_PATHS", "src"),
            ("INPUT_INVENTORY", "true"),
            ("GITHUB_STEP_SUMMARY", path),
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
    let written = fs::read_to_string(summary.path()).unwrap();
    assert!(
        written.starts_with("### Distributed locks\n\n| location | backend |"),
        "{written}"
    );
    assert!(written.contains("| src/lib.rs:2 |"), "{written}");

    // On a pull request (`new-since`), the locks it adds, removes and
    // changes come first, and every lock is folded below them.
    common::git(unannotated.path(), &["init", "-q"]);
    common::git(unannotated.path(), &["add", "."]);
    common::git(unannotated.path(), &["commit", "-q", "-m", "base"]);
    fs::write(
        unannotated.path().join("src/more.rs"),
        "pub fn settle(con: &mut redis::Connection) -> redis::RedisResult<bool> {\n    let reply: Option<String> = redis::cmd(\"SET\").arg(\"settle\").arg(\"me\").arg(\"NX\").query(con)?;\n    Ok(reply.is_some())\n}\n",
    )
    .unwrap();
    fs::write(summary.path(), "").unwrap();
    let (code, stdout, outputs) = run_action(
        unannotated.path(),
        &[
            ("INPUT_PATHS", "src"),
            ("INPUT_INVENTORY", "true"),
            ("INPUT_NEW_SINCE", "HEAD"),
            ("GITHUB_STEP_SUMMARY", path),
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
    let written = fs::read_to_string(summary.path()).unwrap();
    assert!(
        written.starts_with(
            "### Lock changes\n\n**1 lock added, 0 removed, 0 changed, 1 unchanged since HEAD**\n"
        ),
        "{written}"
    );
    assert!(
        written.contains(
            "\n| added | src/more.rs:2 | redis | redis.set-nx | settle | missing | none |"
        ),
        "{written}"
    );
    let folded = written
        .find("<details><summary>Every lock</summary>")
        .expect(&written);
    assert!(written[folded..].contains("| src/lib.rs:2 |"), "{written}");
    assert!(written[folded..].contains("| src/more.rs:2 |"), "{written}");

    // A bad argument is exit 2, which the action's last step turns into a
    // failed job like any other non-zero code.
    let (_, _, outputs) = run_action(annotated.path(), &[("INPUT_ARGS", "--fail-on sometimes")]);
    assert!(outputs.contains("exit-code=2\n"), "{outputs}");
}

/// Multi-line `paths` and `args`: every line is one item (a path may hold
/// spaces), blank lines are ignored, and nothing is globbed; one line is
/// still separated by white space.
#[cfg(unix)]
#[test]
fn the_action_takes_every_line_of_paths_and_args() {
    let dir = copy_project("unannotated");
    let witness = "use redis::Commands;\nfn release_lock(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> {\n    con.del(lock_key)?;\n    Ok(())\n}\n";
    for d in ["more code", "glob*", "globbed"] {
        fs::create_dir(dir.path().join(d)).unwrap();
        fs::write(dir.path().join(d).join("w.rs"), witness).unwrap();
    }
    let (code, stdout, outputs) = run_action(
        dir.path(),
        &[
            ("INPUT_PATHS", "src\n\n  more code  \r\nglob*\n"),
            // Only the first line would be `--fail-on` without its value.
            ("INPUT_ARGS", "--fail-on\n\nnever\n"),
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
    for file in ["src/lib.rs", "more code/w.rs", "glob*/w.rs"] {
        assert!(
            stdout.contains(&format!("file={file},line=")),
            "{file} is audited:\n{stdout}"
        );
    }
    assert!(!stdout.contains("globbed/"), "a path is globbed:\n{stdout}");

    // One line: separated by white space, as before.
    let (code, stdout, outputs) = run_action(
        dir.path(),
        &[
            ("INPUT_PATHS", "src globbed"),
            ("INPUT_ARGS", "--fail-on never"),
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
    assert!(stdout.contains("file=globbed/w.rs,line="), "{stdout}");
    assert!(stdout.contains("file=src/lib.rs,line="), "{stdout}");
}

#[test]
fn cargo_lockaudit_runs_the_same_commands() {
    let dir = root().join("fixtures/projects/unannotated");
    let direct = lockaudit(&dir, &["check", "--format", "short"]);
    // What cargo runs for `cargo lockaudit check --format short`.
    let via_cargo = cargo_lockaudit(&dir, &["lockaudit", "check", "--format", "short"]);
    assert_eq!(direct.code, 1, "{direct:?}");
    assert_eq!(via_cargo.code, 1, "{via_cargo:?}");
    assert_eq!(direct.stdout, via_cargo.stdout);
    assert!(via_cargo.stdout.contains("missing-purpose"));
}

/// The files of each finding of a JSON report, and the number of files
/// audited.
fn files_found(stdout: &str) -> (Vec<String>, u64) {
    let v: serde_json::Value = serde_json::from_str(stdout).expect("JSON");
    let mut files: Vec<String> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    files.sort();
    files.dedup();
    (files, v["summary"]["files"].as_u64().unwrap())
}

/// `cargo lockaudit` takes cargo's package flags: `-p`, `--workspace` with
/// `--exclude` naming a package, `--manifest-path`; a mistyped package is
/// exit 2 with the near name; packages and PATHS together are refused.
#[test]
fn cargo_lockaudit_chooses_packages_as_cargo_does() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&root().join("fixtures/projects/workspace"), tmp.path());
    let dir = tmp.path();
    let json = |args: &[&str]| {
        let mut all = vec!["lockaudit", "check", "--format", "json"];
        all.extend_from_slice(args);
        let r = cargo_lockaudit(dir, &all);
        assert!(r.code == 0 || r.code == 1, "{args:?}: {r:?}");
        files_found(&r.stdout)
    };
    let whole = json(&[]);
    assert!(
        whole.0.iter().any(|f| f.starts_with("billing/")),
        "{whole:?}"
    );
    let billing = json(&["-p", "billing"]);
    assert!(!billing.0.is_empty(), "{billing:?}");
    assert!(
        billing.0.iter().all(|f| f.starts_with("billing/")),
        "{billing:?}"
    );
    assert_eq!(billing.1, 3, "billing has three files: {billing:?}");
    assert_eq!(json(&["--workspace", "--exclude", "mailer"]), billing);
    assert_eq!(json(&["--workspace"]), whole);
    assert_eq!(json(&["--manifest-path", "billing/Cargo.toml"]), billing);
    let mailer = json(&["--package", "mailer"]);
    assert!(
        mailer.0.iter().all(|f| f.starts_with("mailer/")),
        "{mailer:?}"
    );
    assert_eq!(mailer.1, 3);
    // A glob under --workspace stays a file exclude.
    let globbed = json(&[
        "--workspace",
        "--exclude",
        "mailer",
        "--exclude",
        "billing/src/locks.rs",
    ]);
    assert_eq!(globbed.1, 2, "{globbed:?}");

    // `inventory --new-since` compares the same package at the base:
    // billing's lock is not "removed" from mailer.
    common::git(dir, &["init", "-q"]);
    common::git(dir, &["add", "."]);
    common::git(dir, &["commit", "-q", "-m", "base"]);
    let r = cargo_lockaudit(
        dir,
        &[
            "lockaudit",
            "inventory",
            "--new-since",
            "HEAD",
            "--format",
            "json",
            "-p",
            "mailer",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["removed"], serde_json::json!([]), "{}", r.stdout);
    assert_eq!(v["added"], serde_json::json!([]), "{}", r.stdout);
    assert_eq!(v["unchanged"], 0, "{}", r.stdout);

    let typo = cargo_lockaudit(dir, &["lockaudit", "-p", "biling"]);
    assert_eq!(typo.code, 2, "{typo:?}");
    assert!(typo.stderr.contains("did you mean `billing`?"), "{typo:?}");
    let both = cargo_lockaudit(dir, &["lockaudit", "-p", "billing", "billing/src"]);
    assert_eq!(both.code, 2, "{both:?}");
    assert!(both.stderr.contains("not both"), "{both:?}");
    let help = cargo_lockaudit(dir, &["lockaudit", "--help"]);
    assert!(help.stdout.contains("Usage: cargo lockaudit"), "{help:?}");
    assert!(help.stdout.contains("--manifest-path"), "{help:?}");
}

#[test]
fn a_mistyped_subcommand_is_an_error_with_a_suggestion_not_a_path() {
    let tmp = tempfile::tempdir().unwrap();
    let out = lockaudit(tmp.path(), &["chek"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("did you mean `check`?"), "{out:?}");
    // A directory of that name is a path to audit, as before.
    fs::create_dir(tmp.path().join("chek")).unwrap();
    let out = lockaudit(tmp.path(), &["chek"]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// The text of `doc` from the heading `start` to the next heading of the
/// same or a higher level.
fn section<'a>(doc: &str, text: &'a str, start: &str) -> &'a str {
    let level = start.chars().take_while(|c| *c == '#').count();
    let at = format!("\n{text}")
        .find(&format!("\n{start}\n"))
        .unwrap_or_else(|| panic!("{doc} lacks `{start}`"));
    let body = &text[at + start.len()..];
    let end = body
        .match_indices("\n#")
        .find(|(i, _)| {
            let hashes = body[i + 1..].chars().take_while(|c| *c == '#').count();
            hashes <= level && body[i + 1 + hashes..].starts_with(' ')
        })
        .map_or(body.len(), |(i, _)| i);
    &text[at..at + start.len() + end]
}

/// The README and every page of the book, by path.
fn documents() -> Vec<(String, String)> {
    let mut docs = vec![("README.md".to_string(), read("README.md"))];
    for page in common::files_under(&root().join("docs/src"), "md", |_| false) {
        docs.push((common::rel(&page), fs::read_to_string(&page).unwrap()));
    }
    docs
}

const RELEASED: [&str; 5] = ["releases/download", "binstall", "--tag", "@v", "rev: v"];

/// No release exists, so the book's Installation page offers only what
/// works today as available (building from source with `--locked`), and
/// every release path (the tag, the download, binstall, crates.io) stands
/// under "Once a `v*` tag is published" or in a paragraph saying so, with
/// the version in Cargo.toml. The README's short Install offers only the
/// builds from source.
#[test]
fn install_offers_only_what_works_today_and_marks_the_release_paths() {
    let v = version();
    let page_path = "docs/src/installation.md";
    let page = read(page_path);
    let later = section(page_path, &page, "## Once a `v*` tag is published");
    let today = &page[..page
        .find(later)
        .expect("the release paths are on the Installation page")];
    for needle in [
        "cargo install --locked --path .",
        "cargo install --locked --git https://github.com/lockaudit/lockaudit",
        "lockaudit/lockaudit@<commit>",
        "language: system",
    ] {
        assert!(
            today.contains(needle),
            "Installation lacks `{needle}`:\n{today}"
        );
    }
    for released in RELEASED {
        assert!(
            !today.contains(released),
            "Installation offers `{released}` as available today:\n{today}"
        );
    }
    for needle in [
        format!("lockaudit/lockaudit@v{v}"),
        format!("rev: v{v}"),
        format!("--tag v{v}"),
        format!("binstall lockaudit --version {v}"),
        format!("releases/download/v{v}/lockaudit-v{v}-x86_64-unknown-linux-musl.tar.gz"),
    ] {
        assert!(later.contains(&needle), "the release paths lack `{needle}`");
    }
    let readme = read("README.md");
    let install = section("README.md", &readme, "## Install");
    for needle in [
        "cargo install --locked --path .",
        "cargo install --locked --git https://github.com/lockaudit/lockaudit",
    ] {
        assert!(
            install.contains(needle),
            "README's Install lacks `{needle}`"
        );
    }
    for released in RELEASED {
        assert!(
            !install.contains(released),
            "README's Install offers `{released}` as available today:\n{install}"
        );
    }
    // Anywhere else, in the README and the book, a release is named only
    // in a paragraph that says it does not exist yet.
    for (doc, text) in documents() {
        let outside = if doc == page_path {
            text.replace(later, "")
        } else {
            text.clone()
        };
        for paragraph in outside.split("\n\n") {
            for released in [
                format!("@v{v}"),
                format!("rev: v{v}"),
                "releases/download".into(),
            ] {
                if paragraph.contains(&released) {
                    let words = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
                    assert!(
                        words.contains("nce a `v*` tag is published"),
                        "{doc}: `{released}` offered without saying no release exists yet:\n{paragraph}"
                    );
                }
            }
        }
    }
    // No other version is offered anywhere a user copies from.
    let mut sources = documents();
    sources.push((
        ".pre-commit-hooks.yaml".into(),
        read(".pre-commit-hooks.yaml"),
    ));
    sources.push(("action.yml".into(), read("action.yml")));
    for (file, text) in sources {
        for (i, _) in text.match_indices("v0.") {
            let rest: String = text[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            assert_eq!(rest.trim_end_matches('.'), v, "{file} offers v{rest}");
        }
    }
    let hooks = read(".pre-commit-hooks.yaml");
    assert!(hooks.contains("rev: <commit>"), "{hooks}");
    assert!(hooks.contains("language: system"), "{hooks}");
    assert!(read("action.yml").contains(&format!("default: \"{v}\"")));
}

/// The licence files the crate's `license` names, and a changelog with an
/// Unreleased section, exist and ship in the package.
#[test]
fn licences_and_changelog_exist_and_ship() {
    let cargo = read("Cargo.toml");
    assert!(cargo.contains("license = \"MIT OR Apache-2.0\""));
    let mit = read("LICENSE-MIT");
    assert!(mit.starts_with("MIT License"), "{mit}");
    assert!(mit.contains("Copyright (c) The lockaudit authors"));
    let apache = read("LICENSE-APACHE");
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    assert!(apache.contains("END OF TERMS AND CONDITIONS"));
    let changelog = read("CHANGELOG.md");
    assert!(changelog.contains("Keep a Changelog"));
    assert!(changelog.contains("## [Unreleased]"));
    for file in ["LICENSE-MIT", "LICENSE-APACHE", "CHANGELOG.md"] {
        assert!(
            cargo.contains(&format!("\"{file}\"")),
            "Cargo.toml `include` lacks {file}"
        );
    }
}

/// The minimum Rust version is stated where a user reads it, and the
/// script that checks it uses that toolchain.
#[test]
fn the_minimum_rust_version_is_stated_and_checked_by_the_script() {
    let cargo = read("Cargo.toml");
    let msrv = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml has a rust-version");
    for doc in ["README.md", "docs/src/installation.md"] {
        assert!(
            read(doc).contains(&format!("Rust {msrv} or newer")),
            "{doc} does not state the minimum Rust version {msrv}"
        );
    }
    let script = read("scripts/msrv.sh");
    assert!(
        script.contains("rust-version"),
        "the script reads the version from Cargo.toml"
    );
    assert!(script.contains("CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback"));
    assert!(script.contains("--locked"));
}

#[test]
fn release_assets_binstall_and_the_action_agree_on_names() {
    let release = read(".github/workflows/release.yml");
    let cargo = read("Cargo.toml");
    let action = read("scripts/action.sh");
    // The tag is `v{version}`, so these three spell the same file name.
    assert!(release.contains("name=\"lockaudit-${GITHUB_REF_NAME}-${{ matrix.target }}\""));
    assert!(cargo.contains(
        "/releases/download/v{ version }/{ name }-v{ version }-{ target }{ archive-suffix }"
    ));
    assert!(action.contains("name=\"lockaudit-v$VERSION-$t\""));
    assert!(action.contains("releases/download/v$VERSION/$name.$ext"));
    for target in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "aarch64-apple-darwin",
        "x86_64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(release.contains(&format!("target: {target},")), "{target}");
        assert!(action.contains(&format!("echo {target}")), "{target}");
    }
}

/// The YAML files GitHub and pre-commit load: `action.yml`, every
/// workflow and `.pre-commit-hooks.yaml`, by path.
fn loaded_yaml_files() -> Vec<String> {
    let mut files = vec![
        "action.yml".to_string(),
        ".pre-commit-hooks.yaml".to_string(),
    ];
    let workflows = common::files_under(&root().join(".github/workflows"), "yml", |_| false);
    assert!(!workflows.is_empty(), "no workflows found");
    files.extend(workflows.iter().map(|p| common::rel(p)));
    files
}

fn parse_yaml(rel: &str) -> yaml_serde::Value {
    yaml_serde::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel} is not valid YAML: {e}"))
}

/// Every file GitHub or pre-commit loads parses with a real
/// YAML parser and has the keys its loader requires.
#[test]
fn the_action_workflows_and_hooks_parse_as_yaml() {
    let mut problems = Vec::new();
    for rel in loaded_yaml_files() {
        let doc = match yaml_serde::from_str::<yaml_serde::Value>(&read(&rel)) {
            Ok(doc) => doc,
            Err(e) => {
                problems.push(format!("{rel} is not valid YAML: {e}"));
                continue;
            }
        };
        let required: &[&str] = match rel.as_str() {
            "action.yml" => &["name", "description", "inputs", "runs"],
            ".pre-commit-hooks.yaml" => &[],
            _ => &["name", "on", "jobs"],
        };
        for key in required {
            if doc.get(key).is_none() {
                problems.push(format!("{rel}: no `{key}`"));
            }
        }
        if rel == ".pre-commit-hooks.yaml" {
            let hooks = doc.as_sequence().cloned().unwrap_or_default();
            if hooks.is_empty() {
                problems.push(format!("{rel}: not a list of hooks"));
            }
            // What pre-commit requires of each hook, and one hook per id.
            let mut ids = Vec::new();
            for (i, hook) in hooks.iter().enumerate() {
                for key in ["id", "name", "entry", "language"] {
                    if hook.get(key).and_then(|v| v.as_str()).is_none() {
                        problems.push(format!("{rel}: hook {i} has no `{key}`"));
                    }
                }
                if let Some(id) = hook.get("id").and_then(|v| v.as_str()) {
                    if ids.contains(&id.to_string()) {
                        problems.push(format!("{rel}: hook id `{id}` twice"));
                    }
                    ids.push(id.to_string());
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every input of the action has a description, the inputs
/// the action's step hands to scripts/action.sh are inputs, and every
/// step of the composite action names its shell or an action.
#[test]
fn the_action_metadata_is_complete() {
    let action = parse_yaml("action.yml");
    let inputs = action["inputs"].as_mapping().expect("inputs is a mapping");
    for (name, input) in inputs {
        let name = name.as_str().unwrap();
        assert!(
            input["description"].as_str().is_some_and(|d| !d.is_empty()),
            "input `{name}` has no description"
        );
    }
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let steps = action["runs"]["steps"].as_sequence().expect("steps");
    for step in steps {
        assert!(
            step.get("uses").is_some() || step["shell"].as_str() == Some("bash"),
            "a step with neither `uses` nor `shell: bash`: {step:?}"
        );
    }
    let run = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("run"))
        .expect("the step that runs scripts/action.sh");
    let env = run["env"].as_mapping().expect("env");
    let script = read("scripts/action.sh");
    for name in inputs.keys() {
        let name = name.as_str().unwrap();
        let var = format!("INPUT_{}", name.to_uppercase().replace('-', "_"));
        assert_eq!(
            env.get(var.as_str()).and_then(|v| v.as_str()),
            Some(format!("${{{{ inputs.{name} }}}}").as_str()),
            "input `{name}` is not handed to the script as {var}"
        );
        assert!(script.contains(&var), "scripts/action.sh never reads {var}");
    }
}

/// A release as the release workflow publishes it, for this runner: the
/// archive of the built binary and its `.sha256`, in a directory that a
/// stand-in `curl` (first on the PATH) serves by file name. Returns the
/// directory holding the stand-in and the archive's SHA-256.
#[cfg(unix)]
fn fake_release(tmp: &Path) -> (PathBuf, String) {
    use std::os::unix::fs::PermissionsExt;
    let name = format!("lockaudit-v{}-x86_64-unknown-linux-musl", version());
    let release = tmp.join("release");
    fs::create_dir_all(release.join(&name)).unwrap();
    // The archived `lockaudit` runs the built binary (an archive of the
    // debug binary itself would take seconds to compress).
    let shim = release.join(&name).join("lockaudit");
    fs::write(
        &shim,
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", common::bin()),
    )
    .unwrap();
    fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).unwrap();
    let archive = format!("{name}.tar.gz");
    let tar = Command::new("tar")
        .args(["-czf", &archive, &name])
        .current_dir(&release)
        .status()
        .unwrap();
    assert!(tar.success());
    let sum = Command::new("sha256sum")
        .arg(&archive)
        .current_dir(&release)
        .output()
        .unwrap();
    assert!(sum.status.success());
    let sum = String::from_utf8(sum.stdout).unwrap();
    fs::write(release.join(format!("{archive}.sha256")), &sum).unwrap();
    let fakebin = tmp.join("fakebin");
    fs::create_dir_all(&fakebin).unwrap();
    let curl = fakebin.join("curl");
    fs::write(
        &curl,
        format!(
            "#!/bin/sh\n# curl -o OUT URL: the release file of that name, or curl's 404 exit.\nwhile [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\nf={}/$(basename \"$1\")\n[ -f \"$f\" ] || exit 22\ncp \"$f\" \"$out\"\n",
            release.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&curl, fs::Permissions::from_mode(0o755)).unwrap();
    let hash = sum.split_whitespace().next().unwrap().to_string();
    (fakebin, hash)
}

/// Runs scripts/action.sh with the download path taken (no LOCKAUDIT_BIN)
/// on a Linux x64 runner; returns (script exit code, stderr, outputs, the
/// $GITHUB_PATH file's text).
#[cfg(unix)]
fn run_action_downloading(
    dir: &Path,
    tmp: &Path,
    fakebin: &Path,
    envs: &[(&str, &str)],
) -> (i32, String, String, String) {
    let runner = tmp.join("runner");
    fs::create_dir_all(&runner).unwrap();
    let (outputs, path_file) = (tmp.join("outputs"), tmp.join("path"));
    fs::write(&outputs, "").unwrap();
    fs::write(&path_file, "").unwrap();
    let path = format!(
        "{}:{}",
        fakebin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/action.sh"))
        .current_dir(dir)
        .env_remove("LOCKAUDIT_BIN")
        .env("PATH", path)
        .env("RUNNER_OS", "Linux")
        .env("RUNNER_ARCH", "X64")
        .env("INPUT_VERSION", version())
        .env("INPUT_PATHS", ".")
        .env("RUNNER_TEMP", &runner)
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_PATH", &path_file)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_BASE_REF")
        .env_remove("INPUT_NEW_SINCE")
        .env_remove("INPUT_ARGS")
        .env_remove("INPUT_CHECKSUM");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        fs::read_to_string(&outputs).unwrap(),
        fs::read_to_string(&path_file).unwrap(),
    )
}

/// The action verifies the downloaded archive against the
/// `checksum` input when one is given (and then never builds instead),
/// and puts the binary it installed on the PATH of the job's later steps.
#[cfg(unix)]
#[test]
fn the_action_checks_the_checksum_input_and_puts_lockaudit_on_the_path() {
    let project = copy_project("annotated");
    let tmp = tempfile::tempdir().unwrap();
    let (fakebin, hash) = fake_release(tmp.path());

    // The right checksum (any case, surrounding space): installed, run,
    // and its directory is on the PATH.
    let given = format!(" {} \n", hash.to_uppercase());
    let (code, stderr, outputs, path) = run_action_downloading(
        project.path(),
        tmp.path(),
        &fakebin,
        &[("INPUT_CHECKSUM", &given)],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
    let dir = path.lines().next().expect("a directory on GITHUB_PATH");
    let installed = Path::new(dir).join("lockaudit");
    assert!(
        installed.starts_with(tmp.path().join("runner")),
        "{installed:?}"
    );
    let version_out = Command::new(&installed).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version_out.stdout).contains(&version()));

    // Without a checksum input, the release's own `.sha256` is enough.
    let (code, stderr, outputs, path) =
        run_action_downloading(project.path(), tmp.path(), &fakebin, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
    assert!(!path.is_empty());

    // Another checksum: the run stops before lockaudit runs, and nothing
    // is put on the PATH.
    let wrong = "0".repeat(64);
    let (code, stderr, outputs, path) = run_action_downloading(
        project.path(),
        tmp.path(),
        &fakebin,
        &[("INPUT_CHECKSUM", &wrong)],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("does not have the checksum input's SHA-256"),
        "{stderr}"
    );
    assert!(!outputs.contains("exit-code="), "{outputs}");
    assert_eq!(path, "");

    // No archive for this version, with a checksum: an error, not an
    // unverified build from source.
    let (code, stderr, _, _) = run_action_downloading(
        project.path(),
        tmp.path(),
        &fakebin,
        &[("INPUT_CHECKSUM", &hash), ("INPUT_VERSION", "9.9.9")],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no release archive of lockaudit 9.9.9 for this runner to verify"),
        "{stderr}"
    );
}

/// With no release to download (none is published yet), the action builds
/// lockaudit from its own source, the commit `uses:` pins, with
/// `cargo install --locked --path`. Stand-ins for `curl` (every download
/// fails, as it does before a release exists) and `cargo` (records its
/// arguments and installs the binary under test) show what it runs.
#[cfg(unix)]
#[test]
fn the_action_builds_its_own_source_with_locked_when_no_release_exists() {
    use std::os::unix::fs::PermissionsExt;
    let project = copy_project("unannotated");
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("cargo-args");
    let write_tool = |name: &str, body: &str| {
        let p = bin.path().join(name);
        fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    };
    write_tool("curl", "exit 22");
    write_tool(
        "cargo",
        &format!(
            "echo \"$PWD\" > '{log}'\nfor a in \"$@\"; do echo \"$a\" >> '{log}'; done\n\
             while [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=$2; shift; done\n\
             mkdir -p \"$root/bin\" && ln -s '{real}' \"$root/bin/lockaudit\"",
            log = log.display(),
            real = env!("CARGO_BIN_EXE_lockaudit"),
        ),
    );
    let tmp = tempfile::tempdir().unwrap();
    let outputs = tmp.path().join("outputs");
    fs::write(&outputs, "").unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(root().join("scripts/action.sh"))
        .current_dir(project.path())
        .env("PATH", path)
        .env("GITHUB_ACTION_PATH", root())
        .env("INPUT_VERSION", version())
        .env("INPUT_PATHS", "src")
        .env("RUNNER_TEMP", tmp.path())
        .env("GITHUB_OUTPUT", &outputs)
        .env_remove("LOCKAUDIT_BIN")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_BASE_REF")
        .env_remove("INPUT_NEW_SINCE")
        .env_remove("INPUT_ARGS")
        .env_remove("INPUT_SARIF")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let args = fs::read_to_string(&log).expect("cargo was run");
    let args: Vec<&str> = args.lines().collect();
    // Run from outside the audited checkout, so its `.cargo/config.toml`
    // cannot reach the build.
    assert_eq!(Path::new(args[0]), tmp.path(), "{args:?}");
    assert_eq!(args[1], "install", "{args:?}");
    assert!(args.contains(&"--locked"), "{args:?}");
    let at = args.iter().position(|a| *a == "--path").expect("--path");
    assert_eq!(Path::new(args[at + 1]), root(), "{args:?}");
    assert!(
        stderr.contains("building it from the action's source"),
        "{stderr}"
    );
    // The binary it built is the one that audited.
    let outputs = fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
}

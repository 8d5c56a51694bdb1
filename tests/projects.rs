//! The fixture projects with `//~` markers: one test per project under
//! `fixtures/projects/` whose files carry markers, named by its path
//! (`cargo test --test projects wrapped`). The built binary checks the
//! project as a whole (`check --format json .`, exit 1), and the findings
//! must be exactly those the markers of its files name
//! (`tests/common/markers.rs`: no missing, no extra finding); the same run
//! without the pre-filter reports the same findings; and each file named
//! alone (as a pre-commit hook or an editor does) is judged as in the
//! whole run.
//!
//! A project without markers is there for the tests that run the binary
//! on it (`tests/cli.rs`, `tests/ci.rs`, ...) and is listed in
//! [`UNMARKED`], so a project that loses its markers does not silently
//! stop being tested.
//!
//! What the marked projects cover:
//! - `fenced-wrappers`, `wrapped`: correctness locks taken through the
//!   crate's own helpers, wrappers defined in one file of a crate and
//!   called in another (`tests/cli.rs` checks their messages);
//! - `trait-wrappers`: a wrapper behind a trait (`impl Locker for
//!   RedisLocker`) is reached through `&dyn Locker`, `Arc<dyn Locker>`, a
//!   generic bounded by `Locker` (inline and in a `where` clause), `impl
//!   Locker` and a type alias of `Arc<dyn Locker>`, in its own file and in
//!   others; two types' wrapper methods of one name are two wrappers, each
//!   reached through its own type; through the trait, two implementations
//!   that take the lock the same way are one site and two that differ are
//!   none; the in-process implementation of the same trait, a type with a
//!   same-named method of its own, and a cache behind a trait are no lock
//!   sites;
//! - `aliases`: a lease API declared through a type alias of another file
//!   (`type Api = kube::Api<LeaseObject>;`, through `Arc`, named by its
//!   path), while an alias of another kind of object's API stays silent;
//! - `workspace`: two crates of one workspace each define `acquire_lock`;
//!   a caller in each gets its own crate's, so the in-process helper of
//!   one is never read as the other's Redis lock.
//!
//! And each finding once, where the fix goes:
//! - `chains`: an annotation above a wrapper `fn` or on its lock call
//!   covers the calls in every file; a wrapper's own defects and a missing
//!   purpose stand at its lock call; what a caller does with the outcome
//!   stands at the caller; helpers that hand the outcome back through a
//!   `match` or an `Option`, and a campaign spawned on its own task; a
//!   wrapper every file calls only from a future (a quorum's tries) is
//!   judged at its lock call, one some file holds the outcome of at that
//!   call; a MySQL election that returns the row it reads back after its
//!   upsert hands the upsert to its callers;
//! - `lock-crate`: a lock client's own layers are one lock, at the backend
//!   call.
//! - `deep-chains`: a wrapper chain six files long (free functions, an
//!   imported rename, methods, `?`, `unwrap_or`) reaches its outermost
//!   callers, where an ignored result stands and an annotation covers the
//!   lock; a correctness lock's writes five calls away in other files are
//!   judged, fenced or not; chains that call back into themselves across
//!   files end.
//! - `tests-excluded`: the config's `"#[cfg(test)]"` exclude leaves out
//!   test modules, functions and methods, also when a file is named alone.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::Value;

use common::markers::{self, Marker, Reported};

/// The fixture projects that carry no markers.
const UNMARKED: &[&str] = &[
    "acme",
    "annotated",
    "bad-config",
    "bad-pack",
    "fenced-crate",
    "fixable",
    "in-process",
    "lock-crate-user",
    "mixed",
    "severities",
    "unannotated",
];

fn main() {
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = marked_projects()
        .into_iter()
        .map(|name| {
            Trial::test(format!("fixtures/projects/{name}"), move || {
                project_matches_its_markers(&name)
            })
            .with_kind("project")
        })
        .collect();
    trials.push(Trial::test(
        "every_project_has_markers_or_is_listed_unmarked",
        every_project_has_markers_or_is_listed_unmarked,
    ));
    libtest_mimic::run(&args, trials).exit();
}

/// Every project directory, sorted.
fn projects() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(common::root().join("fixtures/projects"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every `.rs` file of a project, relative to it, sorted.
fn rust_files(dir: &Path) -> Vec<String> {
    common::files_under(dir, "rs", |_| false)
        .iter()
        .map(|p| common::rel_to(p, dir))
        .collect()
}

fn has_markers(name: &str) -> bool {
    let dir = common::project(name);
    rust_files(&dir).iter().any(|f| {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .contains("//~")
    })
}

fn marked_projects() -> Vec<String> {
    projects().into_iter().filter(|n| has_markers(n)).collect()
}

fn every_project_has_markers_or_is_listed_unmarked() -> Result<(), Failed> {
    let all = projects();
    let marked: BTreeSet<String> = marked_projects().into_iter().collect();
    let listed: BTreeSet<String> = UNMARKED.iter().map(|s| s.to_string()).collect();
    let mut problems = Vec::new();
    for name in &all {
        match (marked.contains(name), listed.contains(name)) {
            (true, true) => problems.push(format!("{name}: has markers, but is listed unmarked")),
            (false, false) => problems.push(format!(
                "{name}: has no markers: mark its findings, or list it in UNMARKED"
            )),
            _ => {}
        }
    }
    for name in listed.iter().filter(|n| !all.contains(n)) {
        problems.push(format!("{name}: listed in UNMARKED, but no such project"));
    }
    if marked.is_empty() {
        problems.push("no project has markers".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}

/// The findings of a `--format json` report, by file of the project (paths
/// in the report are from the repository root: the part inside the
/// project is kept).
fn by_file(
    report: &Value,
    files: &[String],
    name: &str,
) -> Result<Vec<(String, Reported)>, String> {
    let mut out = Vec::new();
    for f in report["findings"].as_array().ok_or("no findings array")? {
        let path = f["path"].as_str().unwrap();
        let inside = files
            .iter()
            .find(|rel| path.ends_with(rel.as_str()))
            .ok_or_else(|| format!("{path} is not a file of {name}"))?;
        let (line, column) = (
            f["line"].as_u64().unwrap() as usize,
            f["column"].as_u64().unwrap() as usize,
        );
        let id = f["check"].as_str().unwrap();
        let check = lockaudit::checks::CheckId::parse(id)
            .ok_or_else(|| format!("{path}: unknown check `{id}` in the report"))?;
        let message = f["message"].as_str().unwrap().to_string();
        out.push((
            inside.clone(),
            Reported {
                describe: format!("{line}:{column}: [{}]: {message}", check.as_str()),
                line,
                column,
                check,
                message,
            },
        ));
    }
    Ok(out)
}

fn json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("not JSON ({e}):\n{text}"))
}

/// Checks a fixture project and compares its findings with the markers in
/// its files: as a whole, without the pre-filter, and file by file.
fn project_matches_its_markers(name: &str) -> Result<(), Failed> {
    let dir = common::project(name);
    let files = rust_files(&dir);
    let mut expected: Vec<(String, Vec<Marker>, String)> = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let m = markers::parse(&text).map_err(|e| format!("{name}/{file}: {e}"))?;
        expected.push((file.clone(), m, text));
    }
    let r = common::lockaudit(&dir, &["check", "--format", "json", "."]);
    if r.code != 1 {
        return Err(format!("exit {} (expected 1):\n{}", r.code, r.stderr).into());
    }
    let whole = json(&r.stdout)?;
    let found = by_file(&whole, &files, name)?;
    let mut problems = Vec::new();
    for (file, markers, text) in &expected {
        let here: Vec<Reported> = found
            .iter()
            .filter(|(f, _)| f == file)
            .map(|(_, r)| r.clone())
            .collect();
        let p = markers::compare(text, markers, &here);
        if !p.is_empty() {
            problems.push(format!("{file} (whole project):\n{}", p.join("\n")));
        }
    }
    // The pre-filter loses nothing: a file that only calls a wrapper, or
    // runs a statement kept in another file, spells no lock API.
    let unfiltered = common::lockaudit(&dir, &["check", "--format", "json", "--no-prefilter", "."]);
    let all = json(&unfiltered.stdout)?;
    if all["findings"] != whole["findings"] {
        problems.push(format!(
            "--no-prefilter reports other findings:\n  with:    {}\n  without: {}",
            whole["findings"], all["findings"]
        ));
    }
    // A file named alone (a pre-commit hook, an editor) is judged as in
    // the whole run: the rest of its crate is read for what it offers.
    // (Naming `lib.rs` also audits the modules it declares: only the
    // named file's findings count.)
    for (file, markers, text) in &expected {
        let alone = common::lockaudit(&dir, &["check", "--format", "json", file]);
        let alone = json(&alone.stdout)?;
        let here: Vec<Reported> = by_file(&alone, &files, name)?
            .into_iter()
            .filter(|(f, _)| f == file)
            .map(|(_, r)| r)
            .collect();
        let p = markers::compare(text, markers, &here);
        if !p.is_empty() {
            problems.push(format!("{file} (named alone):\n{}", p.join("\n")));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("fixtures/projects/{name}:\n{}", problems.join("\n")).into())
    }
}

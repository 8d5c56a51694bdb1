//! The fixture files: one test per `.rs` file under `fixtures/` (except
//! `fixtures/projects/`, see `tests/projects.rs`), named by its path, so
//! `cargo test --test fixtures redis_` runs the Redis fixtures and a
//! failure names its file. Each file is audited and its findings compared
//! with the `//~` markers in it (`tests/common/markers.rs`): a missing
//! finding and an unmarked finding both fail; a fixture without markers
//! asserts silence. The same file audited without the pre-filter must
//! report exactly the same findings (the pre-filter is sound). How a
//! fixture is set up (its `//@` header, `fixtures/checks/<check-id>/`) is
//! in `tests/common/fixture.rs`.
//!
//! The harness is libtest-mimic: the same command line as the built-in
//! one (filters, `--exact`, `--list`, `--ignored`).

mod common;

use libtest_mimic::{Arguments, Failed, Trial};
use lockaudit::checks::CheckId;
use lockaudit::config::Settings;
use lockaudit::engine::Engine;
use lockaudit::finding::Finding;
use lockaudit::pack::PackSet;

use common::fixture;
use common::markers::{self, describe, Reported};

fn main() {
    let args = Arguments::from_args();
    let files = fixture::files();
    assert!(!files.is_empty(), "no fixtures found");
    let mut trials: Vec<Trial> = files
        .into_iter()
        .map(|path| {
            let rel = common::rel(&path);
            Trial::test(rel.clone(), move || fixture_matches_its_markers(&rel)).with_kind("fixture")
        })
        .collect();
    trials.push(Trial::test(
        "every_check_has_positive_and_negative_fixtures",
        every_check_has_positive_and_negative_fixtures,
    ));
    trials.push(Trial::test(
        "helpers_in_other_files_of_the_crate_are_followed",
        helpers_in_other_files_of_the_crate_are_followed,
    ));
    libtest_mimic::run(&args, trials).exit();
}

/// The fixture reports what its markers say, with and without the
/// pre-filter.
fn fixture_matches_its_markers(rel: &str) -> Result<(), Failed> {
    let path = common::root().join(rel);
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let expected = markers::parse(&text).map_err(|e| format!("{rel}: {e}"))?;
    let s = fixture::setup(&path, &text);
    let with = fixture::run(&s, rel, &bytes, true);
    let reported: Vec<Reported> = with
        .iter()
        .filter(|f| f.suppressed.is_none())
        .map(Reported::of)
        .collect();
    let mut problems = markers::compare(&text, &expected, &reported);
    let without = fixture::run(&s, rel, &bytes, false);
    let (with, without): (Vec<String>, Vec<String>) = (
        with.iter().map(describe).collect(),
        without.iter().map(describe).collect(),
    );
    if with != without {
        problems.push(format!(
            "  the pre-filter changes the findings:\n  with:    {with:?}\n  without: {without:?}"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{rel}:\n{}", problems.join("\n")).into())
    }
}

fn every_check_has_positive_and_negative_fixtures() -> Result<(), Failed> {
    let root = common::root().join("fixtures/checks");
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
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("checks without fixtures:\n{}", missing.join("\n")).into())
    }
}

/// A correctness lock's effects in another file of the same crate are
/// followed: the fenced helper is clean, the unfenced one is reported.
fn helpers_in_other_files_of_the_crate_are_followed() -> Result<(), Failed> {
    let root = common::root();
    let rel = "fixtures/projects/fenced-crate/src/lib.rs";
    let bytes = std::fs::read(root.join(rel)).unwrap();
    let packs = PackSet::builtin();
    let settings = Settings::default();
    let only = [CheckId::UnfencedCorrectnessLock];
    let engine = Engine::new(&packs, &settings).only(&only);
    let found: Vec<String> =
        lockaudit::session::audit_in_crate(&engine, rel, &bytes, root, None, None)
            .findings
            .iter()
            .map(describe)
            .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("17:23:"), "{found:?}");
    // Alone, the helpers are unknown and nothing is reported; the check
    // says which functions it would follow.
    let alone = engine.check_bytes(rel, &bytes, false);
    let none: Vec<&Finding> = alone.findings.iter().collect();
    assert!(none.is_empty(), "{none:?}");
    let asked: Vec<(&str, Option<&str>)> = alone
        .asked
        .calls
        .iter()
        .map(|c| (c.name.as_str(), c.module.as_deref()))
        .collect();
    assert_eq!(
        asked,
        [
            ("write_fenced", Some("store")),
            ("write_plain", Some("store"))
        ]
    );
    Ok(())
}

//! One rendered report per check, human and SARIF, pinned as insta
//! snapshots (`tests/snapshots/rendered__<check-id>_{human,sarif}.snap`),
//! so a change of a message, a help text, a note or a span is a reviewed
//! diff. Each check's report is that of its first fixture with markers in
//! `fixtures/checks/<check-id>/`, audited with only that check as the
//! fixture tests audit it (`tests/common/fixture.rs`), and rendered by the
//! reporters the CLI uses (no colour, 100 columns).
//!
//! `INSTA_UPDATE=always cargo test --test rendered` writes them; review the
//! `.snap` files. CI never writes them.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use libtest_mimic::{Arguments, Failed, Trial};
use lockaudit::checks::CheckId;
use lockaudit::report::{self, Format, Summary};

use common::fixture;

fn main() {
    let args = Arguments::from_args();
    let trials = CheckId::ALL
        .iter()
        .map(|id| {
            let id = *id;
            Trial::test(format!("rendered_{}", id.as_str()), move || rendered(id))
                .with_kind("snapshot")
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// The first fixture with markers of the check.
fn fixture_of(id: CheckId) -> Result<PathBuf, String> {
    let dir = common::root().join("fixtures/checks").join(id.as_str());
    common::files_under(&dir, "rs", |_| true)
        .into_iter()
        .find(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .contains("//~")
        })
        .ok_or_else(|| format!("no fixture with markers in {}", dir.display()))
}

fn rendered(id: CheckId) -> Result<(), Failed> {
    let path = fixture_of(id)?;
    let rel = common::rel(&path);
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let s = fixture::setup(&path, &text);
    let findings = fixture::run(&s, &rel, &bytes, true);
    if !findings.iter().any(|f| f.check == id) {
        return Err(format!("{rel}: no `{id}` finding to render", id = id.as_str()).into());
    }
    let summary = Summary::new(1, 1, &findings);
    let sources = HashMap::from([(rel.clone(), text)]);
    let opts = report::Options {
        color: false,
        width: 100,
        sources: &sources,
        quiet: false,
        tty: false,
        changed: None,
        root: None,
    };
    let human = report::render(Format::Human, &findings, &summary, &opts);
    let sarif = report::render(Format::Sarif, &findings, &summary, &opts);
    // The version changes with every release, not with the check.
    let sarif = common::normalise_sarif(&sarif).replace(env!("CARGO_PKG_VERSION"), "[version]");
    let mut settings = insta::Settings::clone_current();
    settings.set_description(rel.as_str());
    settings.set_omit_expression(true);
    settings.bind(|| {
        insta::assert_snapshot!(format!("{}_human", id.as_str()), human);
        insta::assert_snapshot!(format!("{}_sarif", id.as_str()), sarif);
    });
    Ok(())
}

//! How a fixture file under `fixtures/` (outside `fixtures/projects/`) is
//! audited: its `//@` header chooses the config, the extra packs and the
//! checks; a fixture under `fixtures/checks/<check-id>/` runs with only
//! that check (and `parse-error`) enabled, the others with every check.
//!
//! Header lines (paths relative to the fixture): `//@ config: file.yaml`,
//! `//@ packs: a.yaml, b.yaml`, `//@ checks: id-a, id-b` (run only these).

use std::path::{Path, PathBuf};

use lockaudit::checks::CheckId;
use lockaudit::config::{self, Settings};
use lockaudit::engine::Engine;
use lockaudit::finding::Finding;
use lockaudit::pack::PackSet;
use lockaudit::prefilter::Prefilter;

/// The fixture files, sorted: every `.rs` file under `fixtures/` except
/// those of `fixtures/projects/`.
pub fn files() -> Vec<PathBuf> {
    let projects = super::root().join("fixtures/projects");
    super::files_under(&super::root().join("fixtures"), "rs", |d| d == projects)
}

/// The values of the `//@ key:` header lines, comma separated.
pub fn header(text: &str, key: &str) -> Vec<String> {
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

pub struct Setup {
    pub settings: Settings,
    pub packs: PackSet,
    pub only: Option<Vec<CheckId>>,
}

/// What the fixture at `path` (with text `text`) is audited with.
pub fn setup(path: &Path, text: &str) -> Setup {
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

/// Audits `bytes` as the file `rel` with the fixture's setup, with or
/// without the pre-filter; the findings sorted as reports sort them.
pub fn run(s: &Setup, rel: &str, bytes: &[u8], prefilter: bool) -> Vec<Finding> {
    let pre = prefilter.then(|| Prefilter::new(&s.packs, &s.settings.lock_name));
    let mut engine = Engine::new(&s.packs, &s.settings).with_prefilter(pre.as_ref());
    if let Some(only) = s.only.as_deref() {
        engine = engine.only(only);
    }
    let mut f = engine.check_bytes(rel, bytes, false).findings;
    f.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    f
}

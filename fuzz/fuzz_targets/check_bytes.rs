//! The per-file pipeline: bytes → pre-filter → parse → model → checks →
//! findings. Beyond "no crash": a panic caught inside the engine is a
//! failure here too, and a file the pre-filter skips must have no finding
//! (but a parse error) when audited without it.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use lockaudit::checks::CheckId;
use lockaudit::config::Settings;
use lockaudit::engine::Engine;
use lockaudit::pack::PackSet;
use lockaudit::prefilter::Prefilter;

static PACKS: LazyLock<PackSet> = LazyLock::new(PackSet::builtin);
static SETTINGS: LazyLock<Settings> = LazyLock::new(Settings::default);
static PREFILTER: LazyLock<Prefilter> =
    LazyLock::new(|| Prefilter::new(&PACKS, &SETTINGS.lock_name));

fuzz_target!(|data: &[u8]| {
    // Through the constructors, as the CLI builds its engine: a field
    // added to `Engine` does not break the target.
    let full = Engine::new(&PACKS, &SETTINGS).check_bytes("fuzz.rs", data, true);
    assert!(!full.internal_error, "{:?}", full.findings);
    let filtered = Engine::new(&PACKS, &SETTINGS)
        .with_prefilter(Some(&PREFILTER))
        .check_bytes("fuzz.rs", data, false);
    assert!(!filtered.internal_error);
    if !filtered.parsed {
        let lost: Vec<_> = full
            .findings
            .iter()
            .filter(|f| f.check != CheckId::ParseError)
            .collect();
        assert!(
            lost.is_empty(),
            "the pre-filter skipped a file with findings: {lost:?}"
        );
    } else {
        assert_eq!(full.findings.len(), filtered.findings.len());
    }
});

//! The rule-pack loader: any text is a pack or errors that point into it,
//! and rendering those errors never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockaudit::pack::PackSet;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match PackSet::compile_one("fuzz.yaml", text) {
        Ok(pack) => {
            let set = PackSet::from_packs(vec![pack]);
            let _ = set.trigger_words();
        }
        Err(errors) => {
            let shown = lockaudit::diag::render_yaml_errors(&errors, false);
            assert!(shown.contains("fuzz.yaml"), "{shown}");
        }
    }
});

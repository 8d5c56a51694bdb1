//! The `lockaudit.yaml` loader: any text is settings or errors that point
//! into it, and rendering those errors never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match lockaudit::config::parse("lockaudit.yaml", text, std::path::Path::new(".")) {
        Ok(settings) => {
            let _ = settings.lock_name.as_str();
        }
        Err(errors) => {
            let shown = lockaudit::diag::render_yaml_errors(&errors, false);
            assert!(shown.contains("lockaudit.yaml"), "{shown}");
        }
    }
});

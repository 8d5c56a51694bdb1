//! Memory amplification in the config and rule-pack loaders: whatever the
//! YAML (aliases, deep nesting, long values), loading it may allocate at
//! most a fixed multiple of its size. A counting allocator measures the
//! peak; an input over the budget is a crash, kept as an artifact.
//! The first byte picks the loader (even: config, odd: rule pack).
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;

/// Bytes live now, and the most live at once since the last reset.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let now = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allowed peak above what was live before loading: a fixed multiple of
/// the input, plus room for the built-in packs and regex compilation.
fn budget(input: usize) -> usize {
    64 * input + (32 << 20)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    if pick % 2 == 0 {
        let r = lockaudit::config::parse("lockaudit.yaml", text, std::path::Path::new("."));
        if let Err(errors) = r {
            let _ = lockaudit::diag::render_yaml_errors(&errors, false);
        }
    } else {
        let r = lockaudit::pack::PackSet::compile_one("fuzz.yaml", text);
        if let Err(errors) = r {
            let _ = lockaudit::diag::render_yaml_errors(&errors, false);
        }
    }
    let used = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    assert!(
        used <= budget(text.len()),
        "{used} bytes at peak for {} bytes of YAML",
        text.len()
    );
});

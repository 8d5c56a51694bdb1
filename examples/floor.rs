//! The floors that `scripts/bench.sh` compares `lockaudit check` with:
//!
//! - `floor read PATHS...`: walk (with lockaudit's own walker) and read
//!   every `.rs` file;
//! - `floor parse PATHS...`: the same, plus `syn::parse_file` on each file
//!   (span locations on, the span map freed after each file), on the same
//!   number of threads as lockaudit;
//! - `floor admitted PATHS...`: print the files lockaudit's pre-filter lets
//!   through (with the built-in packs), to time both on just those; with
//!   `FLOOR_WHY=1`, each with the word that let it through.
//!
//! - `floor worst PATHS...`: on one thread, each file's `syn` parse time
//!   next to what `lockaudit check --no-prefilter` spends on it (the whole
//!   per-file engine: parse, model, checks) and the heap it holds at its
//!   peak; prints the files that cost most per parse millisecond and the
//!   ones that need the most memory, so a regression on one shape of code
//!   shows up by name.
//!
//! `--jobs N` sets the threads (default: all cores); `--files LIST` reads
//! the paths from a file, one per line. A summary goes to stderr.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

/// Counts live heap bytes and their peak, for `floor worst`.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let mut jobs = 0;
    let mut paths: Vec<PathBuf> = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--jobs" => jobs = args.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            "--files" => {
                let list = std::fs::read_to_string(args.next().expect("--files LIST"))
                    .expect("the file list is readable");
                paths.extend(list.lines().filter(|l| !l.is_empty()).map(PathBuf::from));
            }
            _ => paths.push(PathBuf::from(a)),
        }
    }
    if !matches!(mode.as_str(), "read" | "parse" | "admitted" | "worst") || paths.is_empty() {
        eprintln!("usage: floor read|parse|admitted|worst [--jobs N] [--files LIST] PATHS...");
        std::process::exit(2);
    }
    let start = Instant::now();
    let files = walk(&paths);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .stack_size(64 * 1024 * 1024)
        .build()
        .expect("thread pool");
    let threads = pool.current_num_threads();
    if mode == "admitted" {
        let packs = lockaudit::pack::PackSet::builtin();
        let settings = lockaudit::config::Settings::default();
        let pre = lockaudit::prefilter::Prefilter::new(&packs, &settings.lock_name);
        let why = std::env::var_os("FLOOR_WHY").is_some();
        let admitted: Vec<(&PathBuf, String)> = pool.install(|| {
            files
                .par_iter()
                .filter_map(|p| {
                    let bytes = std::fs::read(p).ok()?;
                    pre.reason(&bytes).map(|w| (p, w.to_string()))
                })
                .collect()
        });
        for (p, w) in &admitted {
            if why {
                println!("{}\t{w}", p.display());
            } else {
                println!("{}", p.display());
            }
        }
        eprintln!("admitted {} of {} files", admitted.len(), files.len());
        return;
    }
    if mode == "worst" {
        pool.install(|| worst(&files));
        return;
    }
    let parse = mode == "parse";
    let (bytes, failed) = pool.install(|| {
        files
            .par_iter()
            .map(|p| {
                let Ok(bytes) = std::fs::read(p) else {
                    return (0, 0);
                };
                let n = bytes.len();
                if !parse {
                    return (n, 0);
                }
                let ok = std::str::from_utf8(&bytes)
                    .ok()
                    .is_some_and(|t| syn::parse_file(t).is_ok());
                proc_macro2::extra::invalidate_current_thread_spans();
                (n, usize::from(!ok))
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{mode}: {} files, {:.1} MB, {failed} failed to parse, {threads} threads, {secs:.2} s",
        files.len(),
        bytes as f64 / 1e6
    );
}

/// Every `.rs` file under `paths`, found by lockaudit's own walker.
fn walk(paths: &[PathBuf]) -> Vec<PathBuf> {
    let opts = lockaudit::walk::WalkOptions {
        excludes: lockaudit::walk::Excludes::new(&[]).expect("no excludes"),
        config_excluded: std::sync::Arc::new(|_: &std::path::Path, _: bool| false),
        force_exclude: false,
        // As `lockaudit check` walks by default.
        include_vendored: false,
        threads: 0,
    };
    let (mut notes, mut errors) = (Vec::new(), Vec::new());
    lockaudit::walk::collect(paths, &opts, &mut notes, &mut errors).expect("the corpus paths exist")
}

/// One file's costs in `floor worst`.
struct Cost {
    path: PathBuf,
    parse_ms: f64,
    check_ms: f64,
    /// Peak heap above what was live before the file, in bytes.
    heap: usize,
}

fn worst(files: &[PathBuf]) {
    let packs = lockaudit::pack::PackSet::builtin();
    let settings = lockaudit::config::Settings::default();
    let engine = lockaudit::engine::Engine::new(&packs, &settings);
    let mut costs = Vec::new();
    for p in files {
        let Ok(bytes) = std::fs::read(p) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let t = Instant::now();
        let ok = syn::parse_file(text).is_ok();
        let parse_ms = t.elapsed().as_secs_f64() * 1e3;
        proc_macro2::extra::invalidate_current_thread_spans();
        if !ok {
            continue;
        }
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let out = engine.check_bytes(&p.display().to_string(), &bytes, false);
        let check_ms = t.elapsed().as_secs_f64() * 1e3;
        let heap = PEAK.load(Ordering::Relaxed).saturating_sub(base);
        drop(out);
        costs.push(Cost {
            path: p.clone(),
            parse_ms,
            check_ms,
            heap,
        });
    }
    let ratio = |c: &Cost| c.check_ms / c.parse_ms.max(1.0);
    costs.sort_by(|a, b| ratio(b).total_cmp(&ratio(a)));
    // One timing of a small file is mostly noise on a shared machine (and
    // the first file to use a pattern compiles it): time the worst 30 again,
    // three times each, and keep the fastest of each.
    for c in costs.iter_mut().take(30) {
        let Ok(bytes) = std::fs::read(&c.path) else {
            continue;
        };
        for _ in 0..3 {
            let t = Instant::now();
            let p = std::str::from_utf8(&bytes).ok().map(syn::parse_file);
            c.parse_ms = c.parse_ms.min(t.elapsed().as_secs_f64() * 1e3);
            drop(p);
            proc_macro2::extra::invalidate_current_thread_spans();
            let t = Instant::now();
            drop(engine.check_bytes(&c.path.display().to_string(), &bytes, false));
            c.check_ms = c.check_ms.min(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    costs.sort_by(|a, b| ratio(b).total_cmp(&ratio(a)));
    println!("| file | parse (ms) | check (ms) | check / max(parse, 1 ms) | peak heap (MB) |");
    println!("|---|---:|---:|---:|---:|");
    let row = |c: &Cost| {
        println!(
            "| {} | {:.1} | {:.1} | {:.2} | {:.1} |",
            c.path.display(),
            c.parse_ms,
            c.check_ms,
            ratio(c),
            c.heap as f64 / 1048576.0
        )
    };
    costs.iter().take(10).for_each(row);
    println!();
    costs.sort_by_key(|c| std::cmp::Reverse(c.heap));
    println!("Most memory:");
    println!();
    println!("| file | parse (ms) | check (ms) | check / max(parse, 1 ms) | peak heap (MB) |");
    println!("|---|---:|---:|---:|---:|");
    costs.iter().take(5).for_each(row);
    let total_parse: f64 = costs.iter().map(|c| c.parse_ms).sum();
    let total_check: f64 = costs.iter().map(|c| c.check_ms).sum();
    eprintln!(
        "worst: {} files, parse {:.0} ms, check --no-prefilter {:.0} ms ({:.2}x), worst file {:.2}x, most heap {:.1} MB",
        costs.len(),
        total_parse,
        total_check,
        total_check / total_parse,
        costs.iter().map(ratio).fold(0.0, f64::max),
        costs.first().map_or(0.0, |c| c.heap as f64 / 1048576.0)
    );
}

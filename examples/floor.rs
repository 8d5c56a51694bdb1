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
//! `--jobs N` sets the threads (default: all cores); `--files LIST` reads
//! the paths from a file, one per line. A summary goes to stderr.

use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;

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
    if !matches!(mode.as_str(), "read" | "parse" | "admitted") || paths.is_empty() {
        eprintln!("usage: floor read|parse|admitted [--jobs N] [--files LIST] PATHS...");
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
    };
    let (mut notes, mut errors) = (Vec::new(), Vec::new());
    lockaudit::walk::collect(paths, &opts, &mut notes, &mut errors).expect("the corpus paths exist")
}

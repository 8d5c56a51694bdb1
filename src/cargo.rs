//! Package selection as cargo's own commands take it: `--manifest-path`,
//! `-p/--package` and `--workspace` (with `--exclude` naming packages),
//! answered by `cargo metadata --no-deps --offline` through the
//! `cargo_metadata` crate. What is audited is the source of each chosen
//! package's targets: the directory of every target's root file (`src/`,
//! `tests/`, `examples/`, `benches/`), and a build script as its file.
//!
//! Only these flags run cargo; with none, `lockaudit` and `cargo lockaudit`
//! audit the paths named (default: the current directory) and run nothing.

use std::path::{Path, PathBuf};

use cargo_metadata::{MetadataCommand, Package, TargetKind};

use crate::cli::CargoArgs;
use crate::exit::Failure;

impl CargoArgs {
    /// Whether any package selection flag was given.
    pub fn is_set(&self) -> bool {
        self.manifest_path.is_some() || !self.package.is_empty() || self.workspace
    }
}

/// The paths to audit for the packages `args` choose. Under `--workspace`,
/// an `--exclude` value that names a member leaves that package out (as
/// cargo's `--exclude` does) and is taken out of `excludes`; the others
/// stay file globs.
pub fn package_paths(
    args: &CargoArgs,
    excludes: &mut Vec<String>,
    cwd: &Path,
) -> Result<Vec<PathBuf>, Failure> {
    let mut cmd = MetadataCommand::new();
    cmd.no_deps()
        .current_dir(cwd)
        .other_options(vec!["--offline".to_string()]);
    if let Some(m) = &args.manifest_path {
        cmd.manifest_path(m);
    }
    let meta = cmd.exec().map_err(|e| {
        Failure(format!(
            "cannot read the workspace with `cargo metadata`: {}",
            crate::escape::text(&e.to_string())
        ))
    })?;
    let members = meta.workspace_packages();
    let name = |p: &Package| -> String { p.name.to_string() };
    let chosen: Vec<&Package> = if args.workspace {
        let (left_out, globs): (Vec<String>, Vec<String>) = std::mem::take(excludes)
            .into_iter()
            .partition(|e| members.iter().any(|p| name(p) == *e));
        *excludes = globs;
        members
            .iter()
            .copied()
            .filter(|p| !left_out.contains(&name(p)))
            .collect()
    } else if !args.package.is_empty() {
        let mut out = Vec::new();
        for spec in &args.package {
            // `name` or `name@version`, as cargo's package specs.
            let (want, version) = match spec.split_once('@') {
                Some((n, v)) => (n, Some(v)),
                None => (spec.as_str(), None),
            };
            let found = members
                .iter()
                .copied()
                .find(|p| name(p) == want && version.is_none_or(|v| p.version.to_string() == v));
            match found {
                Some(p) => out.push(p),
                None => {
                    let names: Vec<String> = members.iter().map(|p| name(p)).collect();
                    let near = crate::suggest::closest(want, names.iter().map(String::as_str))
                        .map(|n| format!("did you mean `{n}`? "))
                        .unwrap_or_default();
                    return Err(Failure(format!(
                        "-p {}: no such package in the workspace; {near}its members: {}",
                        crate::escape::text(spec),
                        crate::escape::text(&names.join(", "))
                    )));
                }
            }
        }
        out
    } else {
        // `--manifest-path` alone: its package, or a virtual manifest's
        // default members.
        match meta.root_package() {
            Some(p) => vec![p],
            None => meta.workspace_default_packages(),
        }
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    for p in chosen {
        for t in &p.targets {
            let src = t.src_path.as_std_path();
            let path = if t.kind.contains(&TargetKind::CustomBuild) {
                src.to_path_buf()
            } else {
                match src.parent() {
                    Some(d) => d.to_path_buf(),
                    None => continue,
                }
            };
            paths.push(path);
        }
    }
    paths.sort();
    paths.dedup();
    // A directory already covered by another (`src/bin` under `src`) goes.
    let dirs: Vec<PathBuf> = paths.clone();
    paths.retain(|p| {
        !dirs
            .iter()
            .any(|d| d != p && p.starts_with(d) && d.is_dir())
    });
    let base = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    Ok(paths
        .into_iter()
        .map(|p| match p.strip_prefix(&base) {
            Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
            Ok(rel) => rel.to_path_buf(),
            Err(_) => p,
        })
        .collect())
}

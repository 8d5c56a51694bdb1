//! Fingerprints: a finding's identity across unrelated edits. Built from the
//! check id, the path, the enclosing item and the normalised text of the
//! flagged code, never from line numbers, so moving code keeps them; two
//! identical findings in one item are told apart by their order.

use std::collections::HashMap;

use crate::finding::Finding;
use crate::source::SourceFile;

/// 64-bit FNV-1a: stable across platforms and releases.
pub fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The flagged code with all white space removed (first 200 characters).
pub fn normalised_snippet(src: &SourceFile, f: &Finding) -> String {
    let text = src.snippet(&f.span);
    let text = if text.is_empty() {
        src.line_text(f.span.start.line)
    } else {
        text
    };
    text.chars()
        .filter(|c| !c.is_whitespace())
        .take(200)
        .collect()
}

/// `prefix` + `path`, with `.` and `..` segments resolved lexically.
pub fn repo_path(prefix: &str, path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in prefix.split('/').chain(path.split('/')) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// Fills in `fingerprint` for every finding of one file. `prefix` is where
/// the current directory sits in the repository.
pub fn assign(src: &SourceFile, findings: &mut [Finding], prefix: &str) {
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut order: Vec<usize> = (0..findings.len()).collect();
    order.sort_by_key(|&i| findings[i].span.start.offset);
    for i in order {
        let f = &findings[i];
        let snippet = normalised_snippet(src, f);
        let path = repo_path(prefix, &f.path);
        let base = fnv1a(&[f.check.as_str(), &path, &f.item, &snippet]);
        let n = seen.entry(base).or_insert(0);
        let fp = fnv1a(&[&format!("{base:016x}"), &n.to_string()]);
        *n += 1;
        findings[i].fingerprint = format!("{fp:016x}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn repository_paths() {
        assert_eq!(
            super::repo_path("services/api", "src/lib.rs"),
            "services/api/src/lib.rs"
        );
        assert_eq!(
            super::repo_path("services/api", "../web/x.rs"),
            "services/web/x.rs"
        );
        assert_eq!(super::repo_path("", "./a.rs"), "a.rs");
    }
}

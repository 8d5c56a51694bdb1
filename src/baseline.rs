//! Baselines: `--write-baseline FILE` records today's findings by
//! fingerprint; `--baseline FILE` then reports only the others, and counts
//! the recorded findings that no longer exist (stale entries).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::finding::Finding;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub version: u32,
    pub findings: Vec<Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub fingerprint: String,
    pub check: String,
    pub path: String,
    /// For people reading the file; never used to match.
    pub message: String,
}

impl Baseline {
    pub fn from_findings(findings: &[Finding]) -> Baseline {
        let mut entries: Vec<Entry> = findings
            .iter()
            .filter(|f| f.suppressed.is_none())
            .map(|f| Entry {
                fingerprint: f.fingerprint.clone(),
                check: f.check.as_str().to_string(),
                path: f.path.clone(),
                message: f.message.clone(),
            })
            .collect();
        entries.sort_by(|a, b| {
            (&a.path, &a.check, &a.fingerprint).cmp(&(&b.path, &b.check, &b.fingerprint))
        });
        Baseline {
            version: 1,
            findings: entries,
        }
    }

    pub fn len(&self) -> usize {
        self.findings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("baseline serializes");
        s.push('\n');
        s
    }

    pub fn parse(text: &str) -> Result<Baseline, String> {
        let b: Baseline =
            serde_json::from_str(text).map_err(|e| format!("not a lockaudit baseline: {e}"))?;
        if b.version != 1 {
            return Err(format!(
                "baseline version {} is not supported (expected 1)",
                b.version
            ));
        }
        Ok(b)
    }

    /// The baseline without the entries that no longer occur: an entry is
    /// dropped when its file was audited (`audited(path)`) and no finding
    /// matches it; entries for files not audited are kept, never judged.
    /// Nothing is added. Returns the pruned baseline and the dropped entries.
    pub fn prune(
        &self,
        findings: &[Finding],
        audited: &dyn Fn(&str) -> bool,
    ) -> (Baseline, Vec<Entry>) {
        let mut present: HashMap<&str, usize> = HashMap::new();
        for f in findings.iter().filter(|f| f.suppressed.is_none()) {
            *present.entry(f.fingerprint.as_str()).or_default() += 1;
        }
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        for e in &self.findings {
            match present.get_mut(e.fingerprint.as_str()) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    kept.push(e.clone());
                }
                _ if !audited(&e.path) => kept.push(e.clone()),
                _ => dropped.push(e.clone()),
            }
        }
        (
            Baseline {
                version: self.version,
                findings: kept,
            },
            dropped,
        )
    }

    /// Splits findings into those not in the baseline (kept) and the rest.
    /// Returns (kept, how many matched, the baseline entries that match no
    /// finding any more). Each entry matches at most one finding, so a
    /// second copy of a baselined problem is new.
    pub fn filter(&self, findings: Vec<Finding>) -> (Vec<Finding>, usize, Vec<Entry>) {
        let mut remaining: HashMap<&str, usize> = HashMap::new();
        for e in &self.findings {
            *remaining.entry(e.fingerprint.as_str()).or_default() += 1;
        }
        let mut matched = 0;
        let mut kept = Vec::new();
        for f in findings {
            if f.suppressed.is_none() {
                if let Some(n) = remaining.get_mut(f.fingerprint.as_str()) {
                    if *n > 0 {
                        *n -= 1;
                        matched += 1;
                        continue;
                    }
                }
            }
            kept.push(f);
        }
        let mut stale = Vec::new();
        for e in &self.findings {
            if let Some(n) = remaining.get_mut(e.fingerprint.as_str()) {
                if *n > 0 {
                    *n -= 1;
                    stale.push(e.clone());
                }
            }
        }
        (kept, matched, stale)
    }
}

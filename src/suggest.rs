//! "Did you mean": the closest known name to a mistyped one (a subcommand,
//! check id, config key, pack field or format name), by Jaro-Winkler
//! similarity as clap and cargo judge it.

/// The candidate most similar to `word`, when it is similar enough to be
/// what was meant.
pub fn closest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&lower, c), c))
        .filter(|(score, c)| *score >= 0.8 && *c != word)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// ` (did you mean `x`?)` or nothing.
pub fn hint<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    closest(word, candidates)
        .map(|c| format!("did you mean `{c}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn near_names_are_suggested_and_far_ones_are_not() {
        let subcommands = ["check", "inventory", "rules", "explain", "init"];
        assert_eq!(closest("chek", subcommands), Some("check"));
        assert_eq!(closest("invetory", subcommands), Some("inventory"));
        assert_eq!(closest("src", subcommands), None);
        assert_eq!(
            closest("unowned-relase", ["unowned-release", "unowned-renewal"]),
            Some("unowned-release")
        );
    }
}

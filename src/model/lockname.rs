//! Does a name speak of a lock? `lock-name-pattern` is matched against the
//! words of an identifier, key or string (split at `_`, `:`, `-`, `/`, `.`,
//! spaces and lower-to-upper case changes), from the start of a word, with
//! an optional `un` prefix and a plural or verb suffix. So `lock_key`,
//! `LockGuard`, `"lock:{}"`, `unlock`, `leases` and `leadership` are lock
//! names, while `block`, `clock`, `release` and `leaderboard` are not: a
//! bare substring match would make every `test_..._doesnt_block_...`
//! function and every `release_connection` look like lock code.

use regex::Regex;

const SUFFIXES: &[&str] = &["", "s", "es", "ed", "ing", "er", "ers", "ship"];

pub fn is_lock_name(pattern: &Regex, text: &str) -> bool {
    words(text).any(|w| word_matches(pattern, w))
}

fn word_matches(pattern: &Regex, word: &str) -> bool {
    pattern.find_iter(word).any(|m| {
        let pre = &word[..m.start()];
        let post = word[m.end()..].to_ascii_lowercase();
        (pre.is_empty() || pre.eq_ignore_ascii_case("un")) && SUFFIXES.contains(&post.as_str())
    })
}

/// Words of `text`: alphanumeric runs, split again where a lower-case
/// letter or digit is followed by an upper-case one (`LockGuard`).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric()).flat_map(|run| {
        let mut parts = Vec::new();
        let mut start = 0;
        let mut prev: Option<char> = None;
        for (i, c) in run.char_indices() {
            if let Some(p) = prev {
                if (p.is_lowercase() || p.is_ascii_digit()) && c.is_uppercase() {
                    parts.push(&run[start..i]);
                    start = i;
                }
            }
            prev = Some(c);
        }
        parts.push(&run[start..]);
        parts.into_iter().filter(|p| !p.is_empty())
    })
}

/// Whether `bytes[start..end]` is a run of whole words of an identifier:
/// on each side a non-letter, or a change from lower case (or a digit) to
/// upper case. So `redis` is a word of `redis_conn`, `myRedisPool` and
/// `REDIS`, but not of `predis` or `Redistribute`; `elock` is not one of
/// `OnceLock`.
pub fn word_at(bytes: &[u8], start: usize, end: usize) -> bool {
    if start >= end || end > bytes.len() {
        return false;
    }
    let lower_or_digit = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let (first, last) = (bytes[start], bytes[end - 1]);
    let left = start == 0 || {
        let p = bytes[start - 1];
        !p.is_ascii_alphabetic() || (lower_or_digit(p) && first.is_ascii_uppercase())
    };
    let right = end == bytes.len() || {
        let n = bytes[end];
        !n.is_ascii_alphabetic() || (n.is_ascii_uppercase() && lower_or_digit(last))
    };
    left && right
}

/// Whether `word` (any case) occurs in `text` as whole words ([`word_at`]):
/// how a receiver's name is evidence of a client crate.
pub fn mentions_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let lower = text.to_ascii_lowercase();
    let word = word.to_ascii_lowercase();
    lower
        .match_indices(&word)
        .any(|(i, _)| word_at(text.as_bytes(), i, i + word.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_not_substrings() {
        let re = Regex::new(crate::config::DEFAULT_LOCK_NAME_PATTERN).unwrap();
        for yes in [
            "lock_key",
            "LockGuard",
            "\"lock:{}\"",
            "unlock",
            "leases",
            "leadership",
            "MUTEX",
            "acquire_lock",
            "self.lock",
            "semaphores",
            "locking",
        ] {
            assert!(is_lock_name(&re, yes), "{yes}");
        }
        for no in [
            "block",
            "clock",
            "release",
            "leaderboard",
            "test_doesnt_block_execution",
            "cache_key",
            "user:42",
            "flock",
        ] {
            assert!(!is_lock_name(&re, no), "{no}");
        }
    }

    #[test]
    fn crate_names_are_words_of_a_receiver() {
        for yes in [
            "redis",
            "redis_conn",
            "self.redis",
            "myRedisPool",
            "REDIS",
            "redis2",
            "pool.redis_client",
        ] {
            assert!(mentions_word(yes, "redis"), "{yes}");
        }
        for no in ["predis", "Redistribute", "redisconn", "once_lock"] {
            assert!(!mentions_word(no, "redis"), "{no}");
        }
        assert!(!mentions_word("ONCE.get_or_init", "elock"));
        assert!(!mentions_word("OnceLock", "elock"));
        assert!(mentions_word("self.etcd_client", "etcd_client"));
    }
}

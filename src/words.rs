//! The words of a file, taken once when the file is read: every identifier
//! it spells, and every name it defines with `fn`, each kept as a 32-bit
//! hash.
//!
//! The crate passes ([`crate::cross`]) ask of every file of a crate whether
//! it could reach what another file offers (a wrapper's name with its type
//! or module, a statement text's name); the function index asks which files
//! could define a function. Both are answered from these lists, without
//! reading a file again: only a file whose words say yes is read and
//! scanned exactly. A hash shared by two words only sends a file on to
//! that exact scan, which decides; a word is never missed.
//!
//! Words are identifiers as Rust spells them (ASCII letters, digits, `_`,
//! and any non-ASCII character), taken from the whole text, comments and
//! strings included: more words than the code holds only costs a scan.
//! Numbers are not words.

/// A file's words, as a set of hashes (open addressing, 0 for an empty
/// slot), and the names it defines with `fn`, as sorted hashes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FileWords {
    table: Vec<u32>,
    fns: Vec<u32>,
}

/// This run's key: the hashes differ from run to run, so a file cannot be
/// written whose words all fall into one slot of the set (which would make
/// taking its words quadratic). Only which files are scanned exactly could
/// differ between runs, never what is found.
fn key() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static KEY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *KEY.get_or_init(|| {
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    })
}

/// The hash of a word: its bytes eight at a time, keyed, multiplied and
/// mixed down to 32 bits, never 0 (the empty slot).
pub fn hash(word: &[u8]) -> u32 {
    hash_keyed(key(), word)
}

/// [`hash`] with the run's key already read: a file's words are hashed in
/// one loop, and most are shorter than eight bytes.
#[inline]
fn hash_keyed(key: u64, word: &[u8]) -> u32 {
    let mut h = key ^ word.len() as u64;
    let mut chunks = word.chunks_exact(8);
    for chunk in &mut chunks {
        let v = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        h = (h.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // The last bytes, zero-padded, as a little-endian word.
        let v = rest
            .iter()
            .rev()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b));
        h = (h.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    let h = ((h >> 32) ^ h) as u32;
    h.max(1)
}

/// The sorted hashes of `words`, for [`FileWords::meets`].
pub fn hashes<'a>(words: impl Iterator<Item = &'a str>) -> Vec<u32> {
    let mut out: Vec<u32> = words.map(|w| hash(w.as_bytes())).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Which bytes continue an identifier: ASCII letters, digits, `_`, and
/// every byte of a non-ASCII character.
static IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        b += 1;
    }
    t
};

/// Whether `b` continues an identifier (ASCII letters, digits, `_`, any
/// byte of a non-ASCII character).
pub fn is_ident_byte(b: u8) -> bool {
    IDENT[b as usize]
}

/// The slot `h` is found in or goes to: the high bits of its product with
/// the golden ratio, which depend on every bit of `h`.
fn slot(table: &[u32], h: u32) -> usize {
    let mask = table.len() - 1;
    let bits = table.len().trailing_zeros();
    let mut i = ((u64::from(h).wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> (64 - bits)) as usize;
    while table[i] != 0 && table[i] != h {
        i = (i + 1) & mask;
    }
    i
}

impl FileWords {
    /// The bytes it holds.
    pub fn size(&self) -> usize {
        (self.table.len() + self.fns.len()) * std::mem::size_of::<u32>()
    }

    /// One linear pass over `bytes`: each block of 64 bytes becomes a mask
    /// of its identifier bytes, and the words are read from where the mask
    /// turns on and off, not byte by byte.
    pub fn of(bytes: &[u8]) -> FileWords {
        let key = key();
        let mut table = vec![0u32; 64];
        let mut len = 0usize;
        let mut fns = Vec::new();
        let mut after_fn = false;
        let mut word = |w: &[u8], table: &mut Vec<u32>| {
            if w[0].is_ascii_digit() {
                after_fn = false;
                return;
            }
            let h = hash_keyed(key, w);
            let at = slot(table, h);
            if table[at] == 0 {
                table[at] = h;
                len += 1;
                // At most half full: probes stay short.
                if len * 2 > table.len() {
                    // Doubled: the size stays a power of two (the mask).
                    let bigger = vec![0u32; table.len() * 2];
                    let old = std::mem::replace(table, bigger);
                    for h in old.into_iter().filter(|&h| h != 0) {
                        let at = slot(table, h);
                        table[at] = h;
                    }
                }
            }
            if after_fn {
                fns.push(h);
            }
            after_fn = w == b"fn";
        };
        // Where the word being read began, and whether the last byte of the
        // previous block was an identifier byte.
        let mut from = 0usize;
        let mut carry = 0u64;
        for (b, block) in bytes.chunks(64).enumerate() {
            let base = b * 64;
            let mut mask = 0u64;
            for (k, &c) in block.iter().enumerate() {
                mask |= u64::from(IDENT[c as usize]) << k;
            }
            let shifted = (mask << 1) | carry;
            let starts = mask & !shifted;
            // A word ends at the first byte after it that is not part of it
            // (bits past a short last block are never set: the end of the
            // text is handled below).
            let valid = if block.len() == 64 {
                u64::MAX
            } else {
                (1u64 << block.len()) - 1
            };
            let ends = !mask & shifted & valid;
            let mut edges = starts | ends;
            while edges != 0 {
                let k = edges.trailing_zeros() as usize;
                edges &= edges - 1;
                if starts & (1 << k) != 0 {
                    from = base + k;
                } else {
                    word(&bytes[from..base + k], &mut table);
                }
            }
            carry = (mask >> (block.len() - 1)) & 1;
        }
        if carry == 1 {
            word(&bytes[from..], &mut table);
        }
        fns.sort_unstable();
        fns.dedup();
        FileWords { table, fns }
    }

    fn has_hash(&self, h: u32) -> bool {
        !self.table.is_empty() && self.table[slot(&self.table, h)] == h
    }

    /// Whether the file may spell `word` (a hash collision says yes).
    pub fn has(&self, word: &str) -> bool {
        self.has_hash(hash(word.as_bytes()))
    }

    /// Whether the file may spell any of `words`.
    pub fn has_any<'a>(&self, mut words: impl Iterator<Item = &'a str>) -> bool {
        words.any(|w| self.has(w))
    }

    /// Whether the file may spell one of `needles` (sorted hashes, from
    /// [`hashes`]): a lookup per needle, or per word of the file when a
    /// hostile crate offers more names than the file has words.
    pub fn meets(&self, needles: &[u32]) -> bool {
        if needles.len() <= self.table.len() / 2 {
            needles.iter().any(|&h| self.has_hash(h))
        } else {
            self.table
                .iter()
                .any(|&h| h != 0 && needles.binary_search(&h).is_ok())
        }
    }

    /// Whether the file may define a function (or method) named `name`.
    pub fn defines(&self, name: &str) -> bool {
        self.fns.binary_search(&hash(name.as_bytes())).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::FileWords;

    #[test]
    fn identifiers_are_words_and_numbers_are_not() {
        let w = FileWords::of(b"let ok = locks::acquire_lock(&key, 30).await; // r#type 9lives");
        for word in [
            "let",
            "ok",
            "locks",
            "acquire_lock",
            "key",
            "await",
            "r",
            "type",
        ] {
            assert!(w.has(word), "{word}");
        }
        assert!(!w.has("acquire"), "a part of a word is not a word");
        assert!(!w.has("30"));
        assert!(!w.has("9lives"));
        assert!(!w.has("lives"));
    }

    #[test]
    fn names_after_fn_are_definitions() {
        let w = FileWords::of(
            b"pub async fn acquire_lock(k: &str) {}\nimpl L { fn\n  take<T>(&self) {} }\nfn 1x() {}",
        );
        assert!(w.defines("acquire_lock"));
        assert!(w.defines("take"));
        assert!(!w.defines("k"));
        assert!(!w.defines("L"));
        assert!(w.has_any(["nothing", "take"].into_iter()));
        assert!(!w.has_any(["nothing", "else"].into_iter()));
        assert!(w.meets(&super::hashes(["zzz", "acquire_lock"].into_iter())));
        assert!(!w.meets(&super::hashes(["zzz", "acquire"].into_iter())));
        // More needles than words: the file's words are looked up instead.
        let many: Vec<String> = (0..1000).map(|i| format!("n{i}")).collect();
        let mut needles: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(!w.meets(&super::hashes(needles.iter().copied())));
        needles.push("take");
        assert!(w.meets(&super::hashes(needles.iter().copied())));
    }

    /// Words read by blocks are the words read byte by byte: every
    /// identifier at every offset around a block's edge, a word that runs
    /// across blocks or to the end of the text, non-ASCII names and
    /// numbers.
    #[test]
    fn words_across_block_edges_are_whole() {
        let by_bytes = |bytes: &[u8]| -> Vec<String> {
            let mut out = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if !super::is_ident_byte(bytes[i]) {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < bytes.len() && super::is_ident_byte(bytes[i]) {
                    i += 1;
                }
                if !bytes[start].is_ascii_digit() {
                    out.push(String::from_utf8_lossy(&bytes[start..i]).into_owned());
                }
            }
            out
        };
        for pad in 0..70 {
            for tail in ["", " ", "fn überschrift", "x", ";fn take"] {
                let long = "a".repeat(pad * 3);
                let text = format!(
                    "{}fn acquire_lock(k: &str) -> 9lives {long} {{ r#type }}{tail}",
                    " ".repeat(pad)
                );
                let w = FileWords::of(text.as_bytes());
                let words = by_bytes(text.as_bytes());
                assert!(words.iter().all(|x| w.has(x)), "{text:?}");
                assert!(w.defines("acquire_lock"), "{text:?}");
                assert!(!w.has("lives") && !w.has("9lives"), "{text:?}");
                assert!(!w.has("acquire") && !w.has("lock"), "{text:?}");
                if tail.starts_with(";fn") {
                    assert!(w.defines("take"), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn a_file_of_many_words_keeps_them_all() {
        let text: String = (0..20_000).map(|i| format!("fn w{i}() {{}}\n")).collect();
        let w = FileWords::of(text.as_bytes());
        assert!((0..20_000).all(|i| w.has(&format!("w{i}")) && w.defines(&format!("w{i}"))));
        assert!(!w.defines("fn"));
    }

    #[test]
    fn non_ascii_letters_continue_a_word() {
        let w = FileWords::of("fn übernehmen() { verrou_clé() }".as_bytes());
        assert!(w.defines("übernehmen"));
        assert!(w.has("verrou_clé"));
        assert!(!w.has("verrou_cl"));
    }
}

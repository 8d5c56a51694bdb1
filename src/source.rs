//! Source files as the pipeline sees them: the text, its path as printed, and
//! a line index that converts between byte offsets and 1-based line/column
//! positions. Columns are counted in characters, as rustc and editors do.

/// A position in a file: 1-based line, 1-based character column, byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

/// A half-open range of source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    pub start: Pos,
    pub end: Pos,
}

impl Span {
    /// Line 1, column 1.
    pub fn default_at_start() -> Span {
        let p = Pos {
            line: 1,
            column: 1,
            offset: 0,
        };
        Span { start: p, end: p }
    }

    pub fn len(&self) -> usize {
        self.end.offset.saturating_sub(self.start.offset)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, other: &Span) -> bool {
        self.start.offset <= other.start.offset && other.end.offset <= self.end.offset
    }
}

/// Characters between two checkpoints of a line that is not ASCII.
const STEP: usize = 64;

/// One file's text with a line index.
pub struct SourceFile {
    /// Path relative to the current directory, with `/` separators.
    pub path: String,
    pub text: String,
    line_starts: Vec<usize>,
    /// Lines that hold only ASCII, where a column is a byte offset: keeps
    /// positions O(1) on a megabyte-long generated line.
    ascii_lines: Vec<bool>,
    /// On the other lines, a checkpoint every [`STEP`] characters: its byte
    /// offset in the file and the UTF-16 units before it on its line, so
    /// a position on a megabyte-long line costs at most [`STEP`] steps.
    marks: Vec<(usize, usize)>,
    /// Per line, where its checkpoints start in `marks`.
    first_mark: Vec<usize>,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let mut line_starts = vec![0];
        let mut ascii_lines = Vec::new();
        let mut ascii = true;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
                ascii_lines.push(ascii);
                ascii = true;
            } else if b >= 0x80 {
                ascii = false;
            }
        }
        ascii_lines.push(ascii);
        let mut marks = Vec::new();
        let mut first_mark = Vec::with_capacity(line_starts.len());
        for (i, &start) in line_starts.iter().enumerate() {
            first_mark.push(marks.len());
            if ascii_lines[i] {
                continue;
            }
            let end = line_starts.get(i + 1).copied().unwrap_or(text.len());
            let line = text[start..end].trim_end_matches(['\n', '\r']);
            let mut units = 0;
            for (n, (b, c)) in line.char_indices().enumerate() {
                if n % STEP == 0 {
                    marks.push((start + b, units));
                }
                units += c.len_utf16();
            }
        }
        SourceFile {
            path: path.into(),
            text,
            line_starts,
            ascii_lines,
            marks,
            first_mark,
        }
    }

    /// The checkpoints of 0-based line `idx` (empty for an ASCII line).
    fn marks_of(&self, idx: usize) -> &[(usize, usize)] {
        let from = self.first_mark[idx];
        let to = self
            .first_mark
            .get(idx + 1)
            .copied()
            .unwrap_or(self.marks.len());
        &self.marks[from..to]
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The text of a 1-based line, without its line ending.
    pub fn line_text(&self, line: usize) -> &str {
        if line == 0 || line > self.line_starts.len() {
            return "";
        }
        let start = self.line_starts[line - 1];
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// Position of a byte offset (clamped to the text and to a char boundary).
    pub fn pos_of_offset(&self, offset: usize) -> Pos {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line_idx];
        let column = if self.ascii_lines[line_idx] {
            offset - start + 1
        } else {
            // The last checkpoint at or before `offset`, then its chars.
            let marks = self.marks_of(line_idx);
            let k = marks.partition_point(|&(b, _)| b <= offset).max(1) - 1;
            let from = marks.get(k).map_or(start, |m| m.0);
            k * STEP + self.text[from..offset].chars().count() + 1
        };
        Pos {
            line: line_idx + 1,
            column,
            offset,
        }
    }

    /// Position from proc-macro2's line (1-based) and column (0-based, in chars).
    pub fn pos_of_line_col(&self, line: usize, col0: usize) -> Pos {
        if line == 0 || line > self.line_starts.len() {
            return self.pos_of_offset(self.text.len());
        }
        let start = self.line_starts[line - 1];
        let line_text = self.line_text(line);
        if self.ascii_lines[line - 1] {
            let byte_in_line = col0.min(line_text.len());
            return Pos {
                line,
                column: col0 + 1,
                offset: start + byte_in_line,
            };
        }
        let marks = self.marks_of(line - 1);
        let byte_in_line = match marks.get(col0 / STEP) {
            Some(&(b, _)) => {
                let from = b - start;
                line_text[from..]
                    .char_indices()
                    .nth(col0 % STEP)
                    .map_or(line_text.len(), |(b, _)| from + b)
            }
            None => line_text.len(),
        };
        Pos {
            line,
            column: col0 + 1,
            offset: start + byte_in_line,
        }
    }

    /// The UTF-16 code units before `p` on its line (how editors count
    /// columns).
    pub fn utf16_column(&self, p: Pos) -> usize {
        if p.line == 0 || p.line > self.line_starts.len() {
            return 0;
        }
        let before = p.column.saturating_sub(1);
        if self.ascii_lines[p.line - 1] {
            return before.min(self.line_text(p.line).len());
        }
        let marks = self.marks_of(p.line - 1);
        let Some(&(b, units)) = marks.get(before / STEP).or(marks.last()) else {
            return 0;
        };
        let skip = before - (before / STEP).min(marks.len() - 1) * STEP;
        let end = self.line_starts[p.line - 1] + self.line_text(p.line).len();
        units
            + self.text[b..end]
                .chars()
                .take(skip)
                .map(char::len_utf16)
                .sum::<usize>()
    }

    /// The byte offset `units` UTF-16 code units into 1-based `line`:
    /// the first character boundary at or after it, clamped to the line's
    /// end.
    pub fn offset_of_utf16(&self, line: usize, units: usize) -> usize {
        if line == 0 || line > self.line_starts.len() {
            return self.text.len();
        }
        let start = self.line_starts[line - 1];
        let len = self.line_text(line).len();
        if self.ascii_lines[line - 1] {
            return start + units.min(len);
        }
        let marks = self.marks_of(line - 1);
        let k = marks.partition_point(|&(_, u)| u <= units).max(1) - 1;
        let Some(&(mut b, mut seen)) = marks.get(k) else {
            return start;
        };
        let end = start + len;
        for c in self.text[b..end].chars() {
            if seen >= units {
                return b;
            }
            seen += c.len_utf16();
            b += c.len_utf8();
        }
        end
    }

    /// Converts a `proc_macro2::Span` (with `span-locations`) into a [`Span`].
    pub fn span_of(&self, span: proc_macro2::Span) -> Span {
        let s = span.start();
        let e = span.end();
        Span {
            start: self.pos_of_line_col(s.line, s.column),
            end: self.pos_of_line_col(e.line, e.column),
        }
    }

    /// The span of anything that has tokens.
    pub fn span_of_node(&self, node: &impl syn::spanned::Spanned) -> Span {
        self.span_of(node.span())
    }

    pub fn snippet(&self, span: &Span) -> &str {
        let s = span.start.offset.min(self.text.len());
        let e = span.end.offset.clamp(s, self.text.len());
        &self.text[s..e]
    }
}

/// Where a run reads the files it audits: the disk ([`Disk`]) for a
/// `check`; a test counts what a run reads through its own. A run reads
/// each file through it once: later phases borrow the bytes it gave.
pub trait Source: Sync {
    /// The bytes of `path`, or its size when that is more than `limit`
    /// (then it is not read), as [`read_capped`].
    fn read(&self, path: &std::path::Path, limit: u64) -> std::io::Result<Result<Vec<u8>, u64>>;

    /// Told when the run has read every file it audits, those the crate
    /// passes need included: the passes work on the bytes already read.
    /// What the run reads after this is read a second time, which only a
    /// file past the bound on what the run holds
    /// ([`crate::cross::MAX_HELD_BYTES`]) is.
    fn files_read(&self) {}
}

/// The files on disk.
pub struct Disk;

impl Source for Disk {
    fn read(&self, path: &std::path::Path, limit: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
        read_capped(path, limit)
    }
}

/// A file's bytes, or its size when it is larger than `limit` (then it is
/// not read: memory stays bounded whatever the tree holds).
pub fn read_capped(path: &std::path::Path, limit: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Ok(Err(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_not_bytes() {
        let f = SourceFile::new("a.rs", "let é = 1;\nlet ключ = x;\n");
        let p = f.pos_of_offset(f.text.find("x").unwrap());
        assert_eq!((p.line, p.column), (2, 12));
        let q = f.pos_of_line_col(2, 11);
        assert_eq!(q.offset, f.text.find("x").unwrap());
        assert_eq!(f.line_text(1), "let é = 1;");
    }

    /// The checkpoints give what counting from the line's start gives, on
    /// lines longer than many checkpoints, with characters of every width.
    #[test]
    fn positions_on_long_lines_agree_with_counting() {
        let pieces = ["a", "é", "😀", "\t", "ключ", "\r\n", "\n", "x"];
        let mut seed = 7u64;
        for _ in 0..20 {
            let mut text = String::new();
            for _ in 0..600 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (seed >> 33) as usize % (pieces.len() * 4);
                // Mostly one-line pieces: lines run past many checkpoints.
                text.push_str(pieces[if i < pieces.len() { i } else { i % 4 }]);
            }
            let f = SourceFile::new("a.rs", text.as_str());
            for (offset, _) in text.char_indices() {
                let p = f.pos_of_offset(offset);
                let line = f.line_text(p.line);
                let start = f.line_starts[p.line - 1];
                if offset > start + line.len() {
                    // The `\n` of a `\r\n`: past the line's text.
                    continue;
                }
                let in_line = offset - start;
                assert_eq!(p.column, line[..in_line].chars().count() + 1, "{offset}");
                assert_eq!(
                    f.pos_of_line_col(p.line, p.column - 1).offset,
                    start + in_line
                );
                let units: usize = line.chars().take(p.column - 1).map(char::len_utf16).sum();
                assert_eq!(f.utf16_column(p), units);
                let naive = {
                    let mut u = 0;
                    line.char_indices()
                        .find(|(_, c)| {
                            let done = u >= units;
                            u += c.len_utf16();
                            done
                        })
                        .map_or(start + line.len(), |(i, _)| start + i)
                };
                assert_eq!(f.offset_of_utf16(p.line, units), naive);
                assert_eq!(
                    f.offset_of_utf16(p.line, units + 1_000_000),
                    start + line.len()
                );
            }
        }
    }
}

//! The language server's standard input and output. lsp-server's own stdio
//! transport allocates whatever a message's `Content-Length` says before
//! reading it, so one header could abort the server. Here headers are read
//! line by line within [`MAX_HEADER_LINE`] bytes, and a message larger than
//! [`MAX_MESSAGE`] bytes is read past without being kept: the client is told
//! it was ignored, and the next message is served.

use std::io::{self, BufRead, Read};

use lsp_server::{Connection, Message, Notification};

/// Largest message kept, in bytes: a document at the file size ceiling
/// fits even with every character escaped in JSON (`\u0000`, six bytes).
pub const MAX_MESSAGE: usize = 64 << 20;

/// Longest header line (`Content-Length: …`, `Content-Type: …`).
pub const MAX_HEADER_LINE: usize = 1024;

/// What reading one message from the client gave.
#[derive(Debug)]
pub enum Read1 {
    Message(Message),
    /// A message over [`MAX_MESSAGE`] (its size) or not JSON-RPC (why):
    /// read past and ignored.
    Ignored(String),
    /// The input ended.
    End,
}

/// Reads one header line (without its `\r\n`), at most [`MAX_HEADER_LINE`]
/// bytes; `None` at the end of the input.
fn header_line(r: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let n = r
        .by_ref()
        .take(MAX_HEADER_LINE as u64 + 2)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    let Some(text) = line.strip_suffix(b"\r\n") else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            if line.len() > MAX_HEADER_LINE {
                format!("a header line longer than {MAX_HEADER_LINE} bytes")
            } else {
                "a header line that does not end with \\r\\n".to_string()
            },
        ));
    };
    Ok(Some(String::from_utf8_lossy(text).into_owned()))
}

/// Reads the next message. An error is a stream lockaudit cannot follow
/// (a malformed header): the server stops.
pub fn read(r: &mut impl BufRead) -> io::Result<Read1> {
    let mut size: Option<u64> = None;
    let mut first = true;
    loop {
        let Some(line) = header_line(r)? else {
            if first {
                return Ok(Read1::End);
            }
            return Err(io::ErrorKind::UnexpectedEof.into());
        };
        first = false;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a header line without `:`",
            ));
        };
        if name.trim().eq_ignore_ascii_case("Content-Length") {
            let n = value.trim().parse::<u64>().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a Content-Length that is not a number",
                )
            })?;
            size = Some(n);
        }
    }
    let Some(size) = size else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a message without Content-Length",
        ));
    };
    if size > MAX_MESSAGE as u64 {
        // Read past it, keeping nothing (if the input ends first, the
        // next read says so).
        io::copy(&mut r.by_ref().take(size), &mut io::sink())?;
        return Ok(Read1::Ignored(format!(
            "a message of {size} bytes is larger than the {MAX_MESSAGE}-byte limit"
        )));
    }
    let mut body = Vec::new();
    r.by_ref().take(size).read_to_end(&mut body)?;
    if (body.len() as u64) < size {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    match serde_json::from_slice::<Message>(&body) {
        Ok(m) => Ok(Read1::Message(m)),
        Err(e) => Ok(Read1::Ignored(format!(
            "a message that is not JSON-RPC ({e})"
        ))),
    }
}

/// The method of the notification the reader sends the server when it
/// ignored a message: the server tells the client (it alone writes).
pub const IGNORED: &str = "lockaudit/ignoredMessage";

/// Feeds the server (`send`, false when it no longer listens) the
/// messages read from `input`, until the input ends, an `exit`
/// notification is read or the server stops listening.
fn pump(input: &mut impl BufRead, send: impl Fn(Message) -> bool) -> io::Result<()> {
    loop {
        let m = match read(input)? {
            Read1::End => return Ok(()),
            Read1::Ignored(why) => Message::Notification(Notification::new(IGNORED.into(), why)),
            Read1::Message(m) => m,
        };
        let exit = matches!(&m, Message::Notification(n) if n.method == "exit");
        if !send(m) || exit {
            return Ok(());
        }
    }
}

/// The threads that move messages between standard input and output and
/// the connection [`stdio`] returns.
pub struct Io {
    reader: std::thread::JoinHandle<io::Result<()>>,
    writer: std::thread::JoinHandle<io::Result<()>>,
}

/// A connection on standard input and output.
pub fn stdio() -> io::Result<(Connection, Io)> {
    let (server, client) = Connection::memory();
    let Connection {
        sender: to_server,
        receiver: from_server,
    } = client;
    let reader = std::thread::Builder::new()
        .name("lockaudit-lsp-reader".into())
        .spawn(move || {
            let stdin = io::stdin();
            let mut input = io::BufReader::new(stdin.lock());
            pump(&mut input, |m| to_server.send(m).is_ok())
        })?;
    let writer = std::thread::Builder::new()
        .name("lockaudit-lsp-writer".into())
        .spawn(move || -> io::Result<()> {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            for m in from_server {
                m.write(&mut out)?;
            }
            Ok(())
        })?;
    Ok((server, Io { reader, writer }))
}

impl Io {
    /// After the server stopped: waits for its last messages to be
    /// written. An input lockaudit could not follow (a malformed header)
    /// is the error; a reader still waiting on the client is left alone.
    pub fn finish(self) -> io::Result<()> {
        self.writer
            .join()
            .map_err(|_| io::Error::other("the writer thread crashed"))??;
        if self.reader.is_finished() {
            self.reader
                .join()
                .map_err(|_| io::Error::other("the reader thread crashed"))??;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn a_huge_length_is_read_past_without_being_kept() {
        let exit = r#"{"jsonrpc":"2.0","method":"exit","params":null}"#;
        // Declared far larger than memory, then the rest of the input.
        let input = format!(
            "Content-Length: 18446744073709551615\r\n\r\n{}",
            framed(exit)
        );
        let mut r = io::Cursor::new(input.into_bytes());
        match read(&mut r).unwrap() {
            Read1::Ignored(why) => assert!(why.contains("larger than"), "{why}"),
            other => panic!("{other:?}"),
        }
        // It swallowed the rest: the input is over.
        assert!(matches!(read(&mut r).unwrap(), Read1::End));
        // Just over the limit, then a message that is served.
        let mut input = format!("Content-Length: {}\r\n\r\n", MAX_MESSAGE + 1).into_bytes();
        input.resize(input.len() + MAX_MESSAGE + 1, b' ');
        input.extend_from_slice(framed(exit).as_bytes());
        let mut r = io::Cursor::new(input);
        assert!(matches!(read(&mut r).unwrap(), Read1::Ignored(_)));
        match read(&mut r).unwrap() {
            Read1::Message(Message::Notification(n)) => assert_eq!(n.method, "exit"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(read(&mut r).unwrap(), Read1::End));
    }

    #[test]
    fn headers_are_bounded_and_bad_bodies_are_skipped() {
        let long = format!("X-Pad: {}\r\n\r\n", "a".repeat(MAX_HEADER_LINE * 4));
        assert!(read(&mut io::Cursor::new(long.into_bytes())).is_err());
        assert!(read(&mut io::Cursor::new(b"Content-Length: x\r\n\r\n".to_vec())).is_err());
        let input = format!(
            "{}{}",
            framed("[[[not json"),
            framed(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#)
        );
        let mut r = io::Cursor::new(input.into_bytes());
        assert!(matches!(read(&mut r).unwrap(), Read1::Ignored(_)));
        assert!(matches!(read(&mut r).unwrap(), Read1::Message(_)));
    }
}

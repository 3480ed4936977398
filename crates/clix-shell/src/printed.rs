//! What a line has printed so far, kept while it runs so that a line stopped
//! by a limit, a timeout or a cancel still shows what it printed before.
//!
//! The shell hands over each command's output as it is produced, and also
//! keeps it for the line's result. A big chunk (a program's output) is kept
//! here as a shared view of the shell's own buffer, never copied: a line
//! printing 64 MB held it twice. Small chunks (a loop's many short lines) are
//! copied together instead, so that each does not hold a buffer of its own.

use bashkit::StreamData;

/// Chunks from this size on are shared with the shell rather than copied.
const SHARE_FROM: usize = 64 * 1024;

/// stdout and stderr printed so far.
#[derive(Default)]
pub(crate) struct Printed {
    stdout: Chunks,
    stderr: Chunks,
}

impl Printed {
    pub(crate) fn push(&mut self, stdout: &StreamData, stderr: &StreamData) {
        self.stdout.push(stdout);
        self.stderr.push(stderr);
    }

    /// stdout and stderr, each as one buffer.
    pub(crate) fn into_bytes(self) -> (Vec<u8>, Vec<u8>) {
        (self.stdout.into_bytes(), self.stderr.into_bytes())
    }
}

#[derive(Default)]
struct Chunks(Vec<Chunk>);

enum Chunk {
    Copied(Vec<u8>),
    Shared(StreamData),
}

impl Chunks {
    fn push(&mut self, data: &StreamData) {
        if data.is_empty() {
            return;
        }
        if data.len() >= SHARE_FROM {
            self.0.push(Chunk::Shared(data.clone()));
        } else if let Some(Chunk::Copied(last)) = self.0.last_mut() {
            last.extend_from_slice(data.as_bytes());
        } else {
            self.0.push(Chunk::Copied(data.as_bytes().to_vec()));
        }
    }

    fn into_bytes(mut self) -> Vec<u8> {
        if self.0.len() == 1 {
            return match self.0.remove(0) {
                Chunk::Copied(bytes) => bytes,
                Chunk::Shared(data) => data.into_bytes(),
            };
        }
        let total = self.0.iter().map(Chunk::len).sum();
        let mut bytes = Vec::with_capacity(total);
        for chunk in &self.0 {
            bytes.extend_from_slice(chunk.as_bytes());
        }
        bytes
    }
}

impl Chunk {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Chunk::Copied(bytes) => bytes,
            Chunk::Shared(data) => data.as_bytes(),
        }
    }

    fn len(&self) -> usize {
        self.as_bytes().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_come_back_in_order_whatever_their_size() {
        let big = "b".repeat(SHARE_FROM);
        let mut printed = Printed::default();
        for (out, err) in [("a\n", ""), (big.as_str(), "e1\n"), ("c\n", ""), ("d\n", "e2\n")] {
            printed.push(&StreamData::from(out), &StreamData::from(err));
        }
        let (stdout, stderr) = printed.into_bytes();
        assert_eq!(stdout, format!("a\n{big}c\nd\n").into_bytes());
        assert_eq!(stderr, b"e1\ne2\n");
    }

    #[test]
    fn a_big_chunk_is_shared_not_copied() {
        let data = StreamData::from("x".repeat(SHARE_FROM * 2));
        let mut chunks = Chunks::default();
        chunks.push(&data);
        let Chunk::Shared(kept) = &chunks.0[0] else { panic!("a big chunk was copied") };
        assert!(std::ptr::eq(kept.as_bytes().as_ptr(), data.as_bytes().as_ptr()));
    }
}

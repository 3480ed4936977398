//! Byte-native shell stream values.
//!
//! Important decision: bytes are canonical. Text decoding only happens at an
//! explicit consumer boundary; invalid UTF-8 is never rewritten in transport.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Leases for a materialized stream's byte storage and cached text storage.
pub(crate) type StreamStorage = [Option<crate::limits::ExecutionBudgetLease>; 2];

/// Owned data carried by a shell byte stream.
///
/// clix patch (docs/bashkit-patches.md, "stdin read in place"): the bytes and
/// their decoded text are shared (`Arc`) and seen from an offset, so cloning
/// is O(1) and `advance` drops a consumed record in O(record). A `while read`
/// loop used to copy the rest of its input for every line it read, and every
/// command of the loop body copied it again as its stdin: quadratic.
///
/// clix patch ("one copy of valid UTF-8"): bytes that are valid UTF-8 are
/// their own text, so they are held once. Only bytes that are not valid UTF-8
/// keep their lossy decoding beside them. A program printing 64 MB of text
/// held 128 MB here.
#[derive(Clone, Default)]
pub struct StreamData {
    repr: Repr,
    /// The first visible byte.
    byte_start: usize,
    /// The first visible byte of the lossy text (`Repr::Lossy` only; for
    /// `Repr::Text` the text is the bytes, seen from `byte_start`).
    text_start: usize,
}

#[derive(Clone, Default)]
enum Repr {
    #[default]
    Empty,
    /// Valid UTF-8: one buffer is both the bytes and the text.
    Text(Arc<String>),
    /// Not valid UTF-8: the bytes, and their lossy decoding beside them.
    Lossy {
        bytes: Arc<Vec<u8>>,
        text: Arc<String>,
    },
}

impl StreamData {
    fn from_text(text: String) -> Self {
        let repr = if text.is_empty() {
            Repr::Empty
        } else {
            Repr::Text(Arc::new(text))
        };
        Self {
            repr,
            byte_start: 0,
            text_start: 0,
        }
    }

    /// `text` is the lossy decoding of `bytes`.
    fn from_lossy(bytes: Vec<u8>, text: String) -> Self {
        Self {
            repr: Repr::Lossy {
                bytes: Arc::new(bytes),
                text: Arc::new(text),
            },
            byte_start: 0,
            text_start: 0,
        }
    }

    fn from_bytes(bytes: Vec<u8>) -> Self {
        match String::from_utf8(bytes) {
            Ok(text) => Self::from_text(text),
            Err(invalid) => {
                let bytes = invalid.into_bytes();
                let text = String::from_utf8_lossy(&bytes).into_owned();
                Self::from_lossy(bytes, text)
            }
        }
    }

    /// Decode a VFS buffer whose byte capacity is already leased by its caller.
    pub(crate) fn from_admitted_bytes(
        bytes: Vec<u8>,
        budget: &crate::limits::ExecutionBudget,
    ) -> Result<(Self, Option<crate::limits::ExecutionBudgetLease>), crate::limits::LimitExceeded>
    {
        let bytes = match String::from_utf8(bytes) {
            Ok(text) => {
                budget.consume_work(1 + text.len().div_ceil(1024) as u64)?;
                budget.consume_input(text.len())?;
                return Ok((Self::from_text(text), None));
            }
            Err(invalid) => invalid.into_bytes(),
        };
        let mut text = crate::limits::BudgetedString::new(Some(budget))?;
        for chunk in bytes.utf8_chunks() {
            budget.consume_work(1 + chunk.valid().len().div_ceil(1024) as u64)?;
            budget.consume_input(chunk.valid().len())?;
            text.try_push_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                budget.consume_input('\u{fffd}'.len_utf8())?;
                text.try_push('\u{fffd}')?;
            }
        }
        let (text, storage) = text.into_parts();
        Ok((Self::from_lossy(bytes, text), storage))
    }

    /// Copy the visible data through the existing capacity-owning builders.
    pub(crate) fn try_clone_budgeted(
        &self,
        budget: &crate::limits::ExecutionBudget,
    ) -> Result<(Self, StreamStorage), crate::limits::LimitExceeded> {
        budget.consume_work(1 + self.retained_len().div_ceil(1024) as u64)?;
        let mut text = crate::limits::BudgetedString::new(Some(budget))?;
        text.try_push_str(self.visible_text())?;
        if !matches!(self.repr, Repr::Lossy { .. }) {
            let (text, text_storage) = text.into_parts();
            return Ok((Self::from_text(text), [None, text_storage]));
        }
        let mut bytes = crate::limits::BudgetedBytes::new(Some(budget))?;
        bytes.try_extend_from_slice(self.as_bytes())?;
        let (bytes, byte_storage) = bytes.into_parts();
        let (text, text_storage) = text.into_parts();
        Ok((Self::from_lossy(bytes, text), [byte_storage, text_storage]))
    }

    /// Convert admitted text to a stream without an uncharged copy (it is
    /// valid UTF-8, so it is held once).
    pub(crate) fn from_budgeted_string(
        text: crate::limits::BudgetedString,
        budget: Option<&crate::limits::ExecutionBudget>,
    ) -> Result<(Self, StreamStorage), crate::limits::LimitExceeded> {
        if let Some(budget) = budget {
            budget.consume_work(1 + text.len() as u64)?;
        }
        let (text, text_storage) = text.into_parts();
        Ok((Self::from_text(text), [None, text_storage]))
    }

    /// Materialize cached text without releasing the byte buffer's lease or
    /// allocating a temporary lossy string outside the request budget.
    // THREAT[TM-DOS-103]: both representations must be admitted before growth.
    pub(crate) fn from_budgeted_bytes(
        bytes: crate::limits::BudgetedBytes,
        budget: &crate::limits::ExecutionBudget,
    ) -> Result<(Self, StreamStorage), crate::limits::LimitExceeded> {
        let (bytes, byte_storage) = bytes.into_parts();
        let bytes = match String::from_utf8(bytes) {
            Ok(text) => {
                budget.consume_work(1 + text.len().div_ceil(1024) as u64)?;
                return Ok((Self::from_text(text), [byte_storage, None]));
            }
            Err(invalid) => invalid.into_bytes(),
        };
        let mut text = crate::limits::BudgetedString::new(Some(budget))?;
        for chunk in bytes.utf8_chunks() {
            budget.consume_work(1 + chunk.valid().len().div_ceil(1024) as u64)?;
            text.try_push_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                text.try_push('\u{fffd}')?;
            }
        }
        let (text, text_storage) = text.into_parts();
        Ok((Self::from_lossy(bytes, text), [byte_storage, text_storage]))
    }

    pub fn new() -> Self {
        Self::default()
    }
    pub fn as_bytes(&self) -> &[u8] {
        match &self.repr {
            Repr::Empty => b"",
            Repr::Text(text) => &text.as_bytes()[self.byte_start..],
            Repr::Lossy { bytes, .. } => &bytes[self.byte_start..],
        }
    }
    fn visible_text(&self) -> &str {
        match &self.repr {
            Repr::Empty => "",
            Repr::Text(text) => &text[self.byte_start..],
            Repr::Lossy { text, .. } => &text[self.text_start..],
        }
    }
    pub fn into_bytes(self) -> Vec<u8> {
        if self.byte_start > 0 {
            return self.as_bytes().to_vec();
        }
        match self.repr {
            Repr::Empty => Vec::new(),
            Repr::Text(text) => Arc::try_unwrap(text)
                .map(String::into_bytes)
                .unwrap_or_else(|shared| shared.as_bytes().to_vec()),
            Repr::Lossy { bytes, .. } => {
                Arc::try_unwrap(bytes).unwrap_or_else(|shared| (*shared).clone())
            }
        }
    }
    pub fn text(&self) -> Result<&str, std::str::Utf8Error> {
        match &self.repr {
            Repr::Lossy { .. } => std::str::from_utf8(self.as_bytes()),
            _ => Ok(self.visible_text()),
        }
    }
    pub fn text_lossy(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.visible_text())
    }
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Live bytes retained by this buffer: the raw bytes, plus the decoded
    /// text where it is kept apart from them.
    pub(crate) fn retained_len(&self) -> usize {
        match &self.repr {
            Repr::Lossy { .. } => self.len().saturating_add(self.visible_text().len()),
            _ => self.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }

    /// Drops the first `consumed` bytes (a record `read` took), without
    /// copying the rest.
    pub(crate) fn advance(&mut self, consumed: usize) {
        let consumed = consumed.min(self.len());
        let visible = self.as_bytes();
        let cut_stays_valid = match &self.repr {
            Repr::Empty => return,
            Repr::Text(text) => text.is_char_boundary(self.byte_start + consumed),
            Repr::Lossy { .. } => !lossy_decode_changes_at_boundary(visible, consumed),
        };
        if !cut_stays_valid {
            // A character (or an invalid sequence) spans the cut: decode the
            // rest again.
            *self = Self::from_bytes(visible[consumed..].to_vec());
            return;
        }
        if let Repr::Lossy { .. } = self.repr {
            self.text_start += String::from_utf8_lossy(&visible[..consumed]).len();
        }
        self.byte_start += consumed;
    }

    /// The visible text as an owned, unshared string, when it is valid UTF-8.
    fn into_text(self) -> Result<String, Self> {
        let Self {
            repr,
            byte_start,
            text_start,
        } = self;
        match repr {
            Repr::Empty => Ok(String::new()),
            Repr::Text(text) if byte_start > 0 => Ok(text[byte_start..].to_owned()),
            Repr::Text(text) => {
                Ok(Arc::try_unwrap(text).unwrap_or_else(|shared| (*shared).clone()))
            }
            repr => Err(Self {
                repr,
                byte_start,
                text_start,
            }),
        }
    }

    /// The visible bytes and their lossy text as owned, unshared buffers.
    fn into_lossy_parts(self) -> (Vec<u8>, String) {
        let data = match self.into_text() {
            Ok(text) => return (text.as_bytes().to_vec(), text),
            Err(data) => data,
        };
        match data.repr {
            Repr::Lossy { bytes, text } if data.byte_start == 0 => (
                Arc::try_unwrap(bytes).unwrap_or_else(|shared| (*shared).clone()),
                Arc::try_unwrap(text).unwrap_or_else(|shared| (*shared).clone()),
            ),
            // Seen from an offset (`into_text` took Empty and Text).
            repr => {
                let data = Self { repr, ..data };
                (data.as_bytes().to_vec(), data.visible_text().to_owned())
            }
        }
    }

    pub(crate) fn append(&mut self, other: &Self) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            // Shared, not copied: the first output of a line becomes its result.
            *self = other.clone();
            return;
        }
        let this = std::mem::take(self);
        *self = match this.into_text() {
            Ok(mut text) if !matches!(other.repr, Repr::Lossy { .. }) => {
                text.push_str(other.visible_text());
                Self::from_text(text)
            }
            this => {
                let (mut bytes, mut text) = match this {
                    Ok(text) => (text.as_bytes().to_vec(), text),
                    Err(data) => data.into_lossy_parts(),
                };
                let boundary = bytes.len();
                bytes.extend_from_slice(other.as_bytes());
                if lossy_decode_changes_at_boundary(&bytes, boundary) {
                    text = String::from_utf8_lossy(&bytes).into_owned();
                } else {
                    text.push_str(other.visible_text());
                }
                Self::from_lossy(bytes, text)
            }
        };
    }
    pub(crate) fn append_text(&mut self, text: &str) {
        self.append(&Self::from(text));
    }
    pub(crate) fn push_str(&mut self, text: &str) {
        self.append_text(text);
    }
    pub(crate) fn push_byte(&mut self, byte: u8) {
        self.append(&Self::from(vec![byte]));
    }
    /// The first `limit` bytes: the same shared buffer when that is all of it.
    pub(crate) fn prefix(&self, limit: usize) -> Self {
        if limit >= self.len() {
            return self.clone();
        }
        Self::from_bytes(self.as_bytes()[..limit].to_vec())
    }
    /// The bytes after the first `start`, without copying them.
    pub(crate) fn suffix_from(&self, start: usize) -> Self {
        let mut rest = self.clone();
        rest.advance(start);
        rest
    }
    pub(crate) fn command_substitution_text(&self) -> String {
        let bytes: Vec<u8> = self
            .as_bytes()
            .iter()
            .copied()
            .filter(|byte| *byte != 0)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

fn lossy_decode_changes_at_boundary(bytes: &[u8], boundary: usize) -> bool {
    let start = boundary.saturating_sub(3);
    let end = bytes.len().min(boundary.saturating_add(3));
    let mut split = String::from_utf8_lossy(&bytes[start..boundary]).into_owned();
    split.push_str(&String::from_utf8_lossy(&bytes[boundary..end]));
    split != String::from_utf8_lossy(&bytes[start..end])
}

impl fmt::Debug for StreamData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamData")
            .field("bytes", &self.as_bytes())
            .field("text", &self.visible_text())
            .finish()
    }
}
impl fmt::Display for StreamData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text_lossy())
    }
}
impl From<&StreamData> for String {
    fn from(value: &StreamData) -> Self {
        value.visible_text().to_owned()
    }
}
impl From<Vec<u8>> for StreamData {
    fn from(bytes: Vec<u8>) -> Self {
        Self::from_bytes(bytes)
    }
}
impl From<String> for StreamData {
    fn from(text: String) -> Self {
        Self::from_text(text)
    }
}
impl From<&str> for StreamData {
    fn from(value: &str) -> Self {
        value.to_owned().into()
    }
}
impl From<&[u8]> for StreamData {
    fn from(value: &[u8]) -> Self {
        value.to_vec().into()
    }
}
// The text is decoded from the bytes, so equal bytes are equal streams.
impl PartialEq for StreamData {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl Eq for StreamData {}
impl PartialEq<str> for StreamData {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl PartialEq<&str> for StreamData {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl PartialEq<String> for StreamData {
    fn eq(&self, other: &String) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl PartialEq<StreamData> for String {
    fn eq(&self, other: &StreamData) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl PartialEq<StreamData> for str {
    fn eq(&self, other: &StreamData) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl std::ops::Deref for StreamData {
    type Target = str;
    fn deref(&self) -> &Self::Target {
        self.visible_text()
    }
}

impl std::ops::Add<&StreamData> for StreamData {
    type Output = StreamData;
    fn add(mut self, rhs: &StreamData) -> Self::Output {
        self.append(rhs);
        self
    }
}

impl serde::Serialize for StreamData {
    fn serialize<S>(&self, serializer: S) -> Result<S::Ok, S::Error>
    where
        S: serde::Serializer,
    {
        serializer.serialize_str(self.visible_text())
    }
}

#[cfg(test)]
mod tests {
    use super::StreamData;

    #[test]
    fn admitted_bytes_preserve_lossy_text_and_lease() {
        let budget = crate::limits::ExecutionBudget::new(
            &crate::ExecutionLimits::new(),
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        );
        let bytes = b"a\xff\0".to_vec();
        let raw = budget.lease_bytes(bytes.capacity()).unwrap();
        let (stream, text) = StreamData::from_admitted_bytes(bytes, &budget).unwrap();
        assert_eq!(stream.as_bytes(), b"a\xff\0");
        assert_eq!(stream.text_lossy(), "a\u{fffd}\0");
        assert!(budget.live_bytes_for_test() >= 8);
        drop((stream, raw, text));
        assert_eq!(budget.live_bytes_for_test(), 0);
    }

    #[test]
    fn budgeted_clone_exact_boundary_and_refund() {
        // Valid UTF-8 is held once; bytes that are not keep their lossy text too.
        for (source, limit, succeeds) in [
            (StreamData::from("ab"), 1, false),
            (StreamData::from("ab"), 2, true),
            (StreamData::from(b"a\xff".to_vec()), 5, false),
            (StreamData::from(b"a\xff".to_vec()), 6, true),
        ] {
            let budget = crate::limits::ExecutionBudget::new(
                &crate::ExecutionLimits::new().max_live_intermediate_bytes(limit),
                std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            );
            let result = source.try_clone_budgeted(&budget);
            if succeeds {
                let (copy, storage) = result.unwrap();
                assert_eq!(copy, source);
                assert_eq!(copy.text_lossy(), source.text_lossy());
                assert_eq!(budget.live_bytes_for_test(), limit);
                drop((copy, storage));
            } else {
                assert!(result.is_err());
            }
            assert_eq!(budget.live_bytes_for_test(), 0);
        }
    }

    #[test]
    fn budgeted_string_stream_is_held_once() {
        for limit in [3, 4] {
            let budget = crate::limits::ExecutionBudget::new(
                &crate::ExecutionLimits::new().max_live_intermediate_bytes(limit),
                std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            );
            let mut text = crate::limits::BudgetedString::new(Some(&budget)).unwrap();
            let result = text
                .try_push_str("text")
                .and_then(|()| StreamData::from_budgeted_string(text, Some(&budget)));
            if limit == 3 {
                let error = result.err().unwrap();
                assert!(error.to_string().contains("live intermediate"), "{error}");
            } else {
                let (stream, storage) = result.unwrap();
                assert_eq!(stream.as_bytes(), b"text");
                assert_eq!(stream.text_lossy(), "text");
                assert!(budget.lease_bytes(1).is_err());
                drop(storage);
            }
        }
    }

    #[test]
    fn budgeted_text_preserves_bytes_and_lossy_decoding() {
        for input in [
            b"plain".as_slice(),
            "é".as_bytes(),
            b"a\xff\xc3z\0",
            b"\xf0\x90\x80",
        ] {
            let budget = crate::limits::ExecutionBudget::new(
                &crate::limits::ExecutionLimits::default(),
                std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            );
            let mut bytes = crate::limits::BudgetedBytes::new(Some(&budget)).unwrap();
            bytes.try_extend_from_slice(input).unwrap();
            let (stream, _storage) = StreamData::from_budgeted_bytes(bytes, &budget).unwrap();
            assert_eq!(stream.as_bytes(), input);
            assert_eq!(stream.text_lossy(), String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn budgeted_text_copy_counts_against_live_memory() {
        // Bytes that are not UTF-8 keep a decoded copy, and it is counted;
        // valid UTF-8 is its own text and needs no more room.
        for (input, fits) in [(b"te\xfft".as_slice(), false), (b"text".as_slice(), true)] {
            let limits = crate::limits::ExecutionLimits::new().max_live_intermediate_bytes(7);
            let budget = crate::limits::ExecutionBudget::new(
                &limits,
                std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            );
            let mut bytes = crate::limits::BudgetedBytes::new(Some(&budget)).unwrap();
            bytes.try_extend_from_slice(input).unwrap();
            match StreamData::from_budgeted_bytes(bytes, &budget) {
                Ok((stream, _storage)) => {
                    assert!(fits);
                    assert_eq!(stream.as_bytes(), input);
                }
                Err(error) => {
                    assert!(!fits);
                    assert!(error.to_string().contains("live intermediate"), "{error}");
                }
            }
        }
    }

    #[test]
    fn a_cut_inside_a_character_decodes_the_rest_again() {
        let mut stream = StreamData::from("aé");
        stream.advance(2);
        assert_eq!(stream.as_bytes(), b"\xa9");
        assert_eq!(stream.text_lossy(), "\u{fffd}");
        let mut text = StreamData::from("a\nb");
        let shared = text.clone();
        text.advance(2);
        assert_eq!(text.text_lossy(), "b");
        assert_eq!(shared.text_lossy(), "a\nb");
    }

    #[test]
    fn append_redecodes_utf8_split_across_chunks() {
        let mut stream = StreamData::from(vec![0xc3]);
        stream.append(&StreamData::from(vec![0xa9]));

        assert_eq!(stream.as_bytes(), "é".as_bytes());
        assert_eq!(stream.text_lossy(), "é");
    }
}

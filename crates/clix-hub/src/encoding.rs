//! Output that is not UTF-8 (e.g. GBK from an older CLI) is detected and
//! converted, as seed 001 asks, before it is parsed or shown.

use chardetng::EncodingDetector;

/// A tool's output as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub text: String,
    /// The encoding the bytes were read as (`UTF-8` when they already were).
    pub encoding: &'static str,
    /// Some bytes could not be mapped and became U+FFFD.
    pub lossy: bool,
}

impl Decoded {
    /// Whether the bytes were converted from another encoding.
    pub fn converted(&self) -> bool {
        self.encoding != "UTF-8"
    }
}

/// Read bytes as UTF-8 when they are; otherwise guess the encoding
/// (chardetng, no TLD hint) and convert with encoding_rs.
pub fn decode_output(bytes: &[u8]) -> Decoded {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Decoded { text: text.to_string(), encoding: "UTF-8", lossy: false };
    }
    let mut detector = EncodingDetector::new();
    detector.feed(bytes, true);
    let encoding = detector.guess(None, false);
    let (text, used, lossy) = encoding.decode(bytes);
    Decoded { text: text.into_owned(), encoding: used.name(), lossy }
}

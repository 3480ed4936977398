//! Output that is not UTF-8 (e.g. GBK from an older CLI) is detected and
//! converted, as seed 001 asks, before it is parsed or shown.

use chardetng::EncodingDetector;

/// A tool's output as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub text: String,
    /// The encoding the bytes were read as (`UTF-8` when they already were).
    pub encoding: &'static str,
    /// Some bytes could not be mapped and became U+FFFD.
    pub lossy: bool,
}

impl Decoded {
    /// Whether the bytes were converted from another encoding.
    pub(crate) fn converted(&self) -> bool {
        self.encoding != "UTF-8"
    }
}

/// Read bytes as UTF-8 when they are; otherwise guess the encoding
/// (chardetng, no TLD hint) and convert with encoding_rs.
pub(crate) fn decode_output(bytes: &[u8]) -> Decoded {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Decoded { text: text.to_string(), encoding: "UTF-8", lossy: false };
    }
    let mut detector = EncodingDetector::new();
    detector.feed(bytes, true);
    let encoding = detector.guess(None, false);
    let (text, used, lossy) = encoding.decode(bytes);
    Decoded { text: text.into_owned(), encoding: used.name(), lossy }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(text: &str, label: &str) -> Vec<u8> {
        let enc = encoding_rs::Encoding::for_label(label.as_bytes()).unwrap();
        let (bytes, _, unmappable) = enc.encode(text);
        assert!(!unmappable);
        bytes.into_owned()
    }

    #[test]
    fn utf8_passes_through() {
        let d = decode_output("日志 café\n".as_bytes());
        assert_eq!((d.text.as_str(), d.encoding, d.converted(), d.lossy), ("日志 café\n", "UTF-8", false, false));
    }

    #[test]
    fn gbk_and_other_encodings_are_converted() {
        let cases = [
            ("在日志文件中搜索关键字，连接超时的记录共有三十二条，请缩小时间范围后重试。", "gbk", "GBK"),
            (
                "Le café était fermé; nous sommes allés à la bibliothèque près de l'église.",
                "windows-1252",
                "windows-1252",
            ),
            ("ログファイルの中からキーワードを検索しました。接続がタイムアウトしました。", "shift_jis", "Shift_JIS"),
        ];
        for (text, label, name) in cases {
            let bytes = encode(text, label);
            assert!(std::str::from_utf8(&bytes).is_err(), "{label} bytes must not be UTF-8 for this test");
            let d = decode_output(&bytes);
            assert_eq!((d.text.as_str(), d.encoding, d.converted()), (text, name, true), "{label}");
        }
    }
}

//! The binary guard: decides whether bytes may be shown to a model as text.

/// How many leading bytes are scanned for NUL, as `file`/git do.
const NUL_SCAN_BYTES: usize = 8 * 1024;
/// Share of control characters above which output counts as binary.
const CONTROL_RATIO: f64 = 0.10;

/// Why some output is not text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinaryKind {
    /// Image data recognised by its magic bytes; the format name is upper case (`PNG`).
    Image(String),
    /// Any other binary data.
    Other {
        /// A best guess from the magic bytes, such as `application/zip`; `None` when unknown.
        mime: Option<String>,
    },
}

/// Classifies `bytes`; `None` means they are text a model may read.
///
/// Binary means: a NUL within the first 8 KB, invalid UTF-8, or more than 10%
/// control characters other than `\n`, `\r` and `\t` (seed 000/002, mechanism A).
pub fn classify(bytes: &[u8]) -> Option<BinaryKind> {
    if !is_binary(bytes) {
        return None;
    }
    Some(match infer::get(bytes) {
        Some(kind) if kind.matcher_type() == infer::MatcherType::Image => {
            BinaryKind::Image(kind.extension().to_ascii_uppercase())
        }
        Some(kind) => BinaryKind::Other { mime: Some(kind.mime_type().to_string()) },
        None => BinaryKind::Other { mime: None },
    })
}

fn is_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(NUL_SCAN_BYTES)];
    if head.contains(&0) {
        return true;
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return true;
    };
    let total = text.chars().count();
    if total == 0 {
        return false;
    }
    let control = text.chars().filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')).count();
    control as f64 / total as f64 > CONTROL_RATIO
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
    const JPEG: &[u8] = b"\xFF\xD8\xFF\xE0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0";
    const GIF: &[u8] = b"GIF89a\x01\0\x01\0\x80\0\0\0\0\0\xff\xff\xff!";
    const WEBP: &[u8] = b"RIFF\x1a\0\0\0WEBPVP8L\x0d\0\0\0\x2f\0\0\0\x10";
    const ZIP: &[u8] = b"PK\x03\x04\x14\0\0\0\x08\0\0\0!\0";

    #[test]
    fn table() {
        let esc_heavy = "\x1b[31m\x1b[0m\x07\x07\x07ab".to_string();
        let ansi_light = format!("{}\x1b[0m", "normal text line\n".repeat(10));
        let cases: Vec<(&str, Vec<u8>, Option<BinaryKind>)> = vec![
            ("empty", vec![], None),
            ("plain", b"hello\nworld\n".to_vec(), None),
            ("crlf and tabs", b"a\tb\r\nc\r\n".to_vec(), None),
            ("utf8 multibyte", "日本語テキスト ✓\n".as_bytes().to_vec(), None),
            ("nul byte", b"abc\0def".to_vec(), Some(BinaryKind::Other { mime: None })),
            ("invalid utf8", b"caf\xe9\n".to_vec(), Some(BinaryKind::Other { mime: None })),
            ("many controls", esc_heavy.into_bytes(), Some(BinaryKind::Other { mime: None })),
            ("few controls", ansi_light.into_bytes(), None),
            ("png", PNG.to_vec(), Some(BinaryKind::Image("PNG".into()))),
            ("jpeg", JPEG.to_vec(), Some(BinaryKind::Image("JPG".into()))),
            ("gif", GIF.to_vec(), Some(BinaryKind::Image("GIF".into()))),
            ("webp", WEBP.to_vec(), Some(BinaryKind::Image("WEBP".into()))),
            ("zip", ZIP.to_vec(), Some(BinaryKind::Other { mime: Some("application/zip".into()) })),
        ];
        for (name, bytes, want) in cases {
            assert_eq!(classify(&bytes), want, "case {name}");
        }
    }

    #[test]
    fn nul_after_first_8k_but_valid_utf8_is_text_only_if_controls_are_rare() {
        let mut bytes = vec![b'a'; NUL_SCAN_BYTES];
        bytes.push(0);
        // One NUL in 8 KB of letters: not in the scanned head, and under 10% control.
        assert_eq!(classify(&bytes), None);
    }
}

//! Non-UTF-8 output is detected and converted before it is parsed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_hub::{check_output, decode_output, parse_error};
use serde_json::json;

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
        ("Le café était fermé; nous sommes allés à la bibliothèque près de l'église.", "windows-1252", "windows-1252"),
        ("ログファイルの中からキーワードを検索しました。接続がタイムアウトしました。", "shift_jis", "Shift_JIS"),
    ];
    for (text, label, name) in cases {
        let bytes = encode(text, label);
        assert!(std::str::from_utf8(&bytes).is_err(), "{label} bytes must not be UTF-8 for this test");
        let d = decode_output(&bytes);
        assert_eq!((d.text.as_str(), d.encoding, d.converted()), (text, name, true), "{label}");
    }
}

#[test]
fn gbk_json_and_gbk_errors_are_read() {
    let stdout = encode(r#"[{"message": "连接超时，请检查网络配置后重试", "count": 32}]"#, "gbk");
    let v = check_output("log-search", Some(&json!({"type": "array"})), &stdout).unwrap();
    assert_eq!(v, json!([{"message": "连接超时，请检查网络配置后重试", "count": 32}]));
    let stderr = encode(
        r#"{"error_code": "RANGE_TOO_LARGE", "message": "时间范围超过三十天", "hint": "请缩小时间范围"}"#,
        "gbk",
    );
    let e = parse_error(&stderr).unwrap();
    assert_eq!((e.message.as_str(), e.hint.as_deref()), ("时间范围超过三十天", Some("请缩小时间范围")));
}

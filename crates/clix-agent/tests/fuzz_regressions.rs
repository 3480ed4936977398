//! Inputs the fuzz targets (`fuzz/`, see docs/reliability.md) found, kept as
//! tests so the bugs stay fixed on the stable toolchain.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use std::time::Duration;

use clix_agent::{ChatRequest, Message, ProviderError, ProviderKind, Role, ToolChoice, ToolSpec};
use support::Reply;

/// Fuzz target `sse`: a `Retry-After` header that is a number but not a
/// duration (negative, NaN, infinite, or beyond `Duration`) made the
/// provider panic (`Duration::from_secs_f64`) instead of answering with the
/// HTTP error. Such a header is ignored; a usable one is still read.
#[tokio::test]
async fn a_retry_after_that_is_no_duration_is_ignored() {
    let tool =
        ToolSpec { name: "run".into(), description: "run a command line".into(), parameters: serde_json::json!({}) };
    let messages = [Message::new(Role::User, "hi")];
    let request = ChatRequest {
        messages: &messages,
        tools: std::slice::from_ref(&tool),
        tool_choice: ToolChoice::Auto,
        max_output_tokens: 8,
    };
    let cases = [("-1", None), ("NaN", None), ("inf", None), ("1e400", None), ("1e300", None), ("2.5", Some(2500))];
    for (value, want_ms) in cases {
        let body = r#"{"error": {"message": "slow down"}}"#.to_string();
        let server = support::start(vec![Reply::Status(429, vec![("retry-after", value.to_string())], body)]).await;
        let provider = support::provider(ProviderKind::OpenAi, server.url.clone(), None, "m", false);
        let err = provider.complete(&request, &mut |_| {}).await.unwrap_err();
        match err {
            ProviderError::Http { status, message, retry_after } => {
                assert_eq!((status, message.as_str()), (429, "slow down"), "Retry-After: {value}");
                assert_eq!(retry_after, want_ms.map(Duration::from_millis), "Retry-After: {value}");
            }
            other => panic!("Retry-After: {value}: {other:?}"),
        }
    }
}

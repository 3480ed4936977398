//! The agent tests' own helpers; the scripted model server they talk to is
//! clix-testkit's, shared with the binary's and the eval's tests.
#![allow(dead_code, unused_imports)]

pub(crate) use clix_testkit::model_server::*;

use clix_agent::{Provider, ProviderKind, ResolvedProvider};
use clix_engine::{Engine, EngineConfig};

/// An engine on `ws` with only the in-process commands.
pub(crate) async fn engine(ws: &std::path::Path) -> Engine {
    Engine::new(EngineConfig::new(ws)).await.unwrap()
}

/// A provider for `base_url`.
pub(crate) fn provider(
    kind: ProviderKind,
    base_url: String,
    api_key: Option<&str>,
    model: &str,
    stream: bool,
) -> Provider {
    let resolved = ResolvedProvider {
        kind,
        base_url,
        api_key: api_key.map(Into::into),
        model: model.into(),
        stream,
        temperature: None,
        from_env: Vec::new(),
        default_endpoint: false,
    };
    Provider::new(&resolved)
}

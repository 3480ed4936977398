//! Streamable HTTP: the same server at `http://ADDR/mcp`, one engine per MCP
//! session id, loopback unless a bearer token guards it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::server::{ClixServer, Shared};
use crate::{McpConfig, ServeError};

/// How the HTTP server listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Bearer token every request must carry; required off loopback.
    pub token: Option<String>,
    /// A session (and its shell) unused this long is closed.
    pub idle: Duration,
}

impl HttpOptions {
    /// Refuses a bind that would expose an unauthenticated shell.
    pub fn check(&self) -> Result<(), ServeError> {
        if let Some(token) = &self.token
            && token.trim().is_empty()
        {
            return Err(ServeError("--token must not be empty".into()));
        }
        if !self.addr.ip().is_loopback() && self.token.is_none() {
            return Err(ServeError(format!(
                "refusing to serve a shell on {} without authentication: binding a non-loopback address \
                 requires --token TOKEN (clients send `Authorization: Bearer TOKEN`)",
                self.addr
            )));
        }
        Ok(())
    }
}

/// Serves MCP over streamable HTTP at `/mcp` until Ctrl-C or SIGTERM.
/// `ready` gets the bound address (useful with port 0).
pub async fn serve_http(
    config: McpConfig,
    options: HttpOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    options.check()?;
    // The first engine checks the workspace and settings before we listen.
    let (shared, engine) = Shared::new(config, true).await?;
    drop(engine);

    let stop = CancellationToken::new();
    let mut http = StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    if !options.addr.ip().is_loopback() {
        // Off loopback the bearer token is the guard; DNS-rebinding checks
        // would only reject the names clients use to reach this host.
        http = http.disable_allowed_hosts();
    }
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(options.idle);
    let factory_shared = Arc::clone(&shared);
    let service =
        StreamableHttpService::new(move || Ok(ClixServer::new(Arc::clone(&factory_shared))), Arc::new(sessions), http);

    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(token) = options.token.clone() {
        router = router.layer(middleware::from_fn_with_state(Arc::<str>::from(token), bearer));
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| ServeError(format!("cannot listen on {}: {e}", options.addr)))?;
    let local = listener.local_addr().map_err(|e| ServeError(e.to_string()))?;
    ready(local);
    let shutdown = stop.clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            shutdown.cancel();
        })
        .await
        .map_err(|e| ServeError(format!("HTTP server failed: {e}")))
}

/// Rejects a request without `Authorization: Bearer <token>`.
async fn bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    if authorized(request.headers(), &token) {
        next.run(request).await
    } else {
        (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], "missing or wrong bearer token\n")
            .into_response()
    }
}

fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some((scheme, given)) = value.split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer") && constant_time_eq(given.trim().as_bytes(), token.as_bytes())
}

/// Compares without an early exit, so timing does not reveal a prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i % b.len().max(1)).copied().unwrap_or(0));
    }
    diff == 0
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn bearer_token_must_match_exactly() {
        assert!(authorized(&headers("Bearer s3cret"), "s3cret"));
        assert!(authorized(&headers("bearer s3cret"), "s3cret"));
        assert!(!authorized(&headers("Bearer s3cre"), "s3cret"));
        assert!(!authorized(&headers("Bearer s3crett"), "s3cret"));
        assert!(!authorized(&headers("Basic s3cret"), "s3cret"));
        assert!(!authorized(&HeaderMap::new(), "s3cret"));
    }

    #[test]
    fn non_loopback_requires_a_token() {
        let open = HttpOptions { addr: "0.0.0.0:8765".parse().unwrap(), token: None, idle: Duration::from_secs(1) };
        assert!(open.check().unwrap_err().0.contains("--token"));
        let guarded = HttpOptions { token: Some("t".into()), ..open.clone() };
        assert!(guarded.check().is_ok());
        let local = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), ..open.clone() };
        assert!(local.check().is_ok());
        let v6 = HttpOptions { addr: "[::1]:0".parse().unwrap(), ..open };
        assert!(v6.check().is_ok());
    }
}

//! Streamable HTTP: the same server at `http://ADDR/mcp`, one engine per MCP
//! session id, every request carrying the bearer token ([`crate::token`]).
//! Browser requests from other sites are refused by their `Origin` (DNS
//! rebinding) before the token or the session is looked at, and a new
//! session past `--max-sessions` gets 503 instead of more memory. With
//! `--route NAME` every session id ends with `.NAME` ([`crate::route`]), for
//! a load balancer in front of several replicas.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use clix_common::Secret;

use crate::route::{Route, RoutedSessions};
use crate::server::{ClixServer, Shared};
use crate::{ServeConfig, ServeError};

/// How the HTTP server listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen (`--http ADDR`).
    pub addr: SocketAddr,
    /// Bearer token every request must carry, on every address.
    pub token: Secret,
    /// A session (and its shell) unused this long is closed.
    pub idle: Duration,
    /// Most sessions open at once; a new one past it is refused with 503.
    pub max_sessions: usize,
    /// Browser origins (`scheme://host[:port]`, or `null`) allowed besides
    /// loopback ones; a request with any other `Origin` gets 403.
    pub allowed_origins: Vec<String>,
    /// `--route NAME`: the suffix of every session id this replica issues.
    pub route: Option<Route>,
}

impl HttpOptions {
    /// What `clix mcp --http` says once at start: what clients send
    /// (`token`'s announcement), and what the sessions may hold in files.
    pub fn announcement(&self, token: &crate::Token, max_tmp_bytes: u64) -> String {
        format!(
            "{}\nclix mcp: at most {} sessions, each keeping up to {max_tmp_bytes} bytes of in-memory files until idle \
             for {} s (--max-sessions, [limits] max_tmp_bytes, --idle-timeout)",
            token.announcement(),
            self.max_sessions,
            self.idle.as_secs()
        )
    }

    /// Refuses options that would expose an unauthenticated shell, or serve none.
    pub fn check(&self) -> Result<(), ServeError> {
        if self.token.expose().trim().is_empty() {
            return Err(ServeError("the bearer token must not be empty".into()));
        }
        if self.max_sessions == 0 {
            return Err(ServeError("--max-sessions must be at least 1".into()));
        }
        for origin in &self.allowed_origins {
            if origin != "null" && Origin::parse(origin).is_none() {
                return Err(ServeError(format!(
                    "--allow-origin {origin:?} is not an origin: give scheme://host[:port] with no path, \
                     e.g. https://app.example.com or http://192.168.1.5:3000"
                )));
            }
        }
        Ok(())
    }
}

/// Serves MCP over streamable HTTP at `/mcp` until Ctrl-C or SIGTERM.
/// `ready` gets the bound address (useful with port 0).
pub async fn serve_http(
    config: ServeConfig,
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
    let mut local = LocalSessionManager::default();
    local.session_config.keep_alive = Some(options.idle);
    let sessions = Arc::new(RoutedSessions::new(local, options.route.as_ref()));
    let factory_shared = Arc::clone(&shared);
    let service = StreamableHttpService::new(
        move || Ok(ClixServer::new(Arc::clone(&factory_shared))),
        Arc::clone(&sessions),
        http,
    );

    // Layers run from the last added: origin, then token, then the cap.
    let cap = Arc::new(SessionCap { sessions, max: options.max_sessions });
    let mut router =
        axum::Router::new().nest_service("/mcp", service).layer(middleware::from_fn_with_state(cap, limit_sessions));
    router = router.layer(middleware::from_fn_with_state(Arc::<str>::from(options.token.expose()), bearer));
    let origins = Arc::new(OriginPolicy::new(&options.allowed_origins));
    router = router.layer(middleware::from_fn_with_state(origins, check_origin));
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| ServeError(format!("cannot listen on {}: {e}", options.addr)))?;
    let local = listener.local_addr().map_err(|e| ServeError(e.to_string()))?;
    ready(local);
    let shutdown = stop.clone();
    // Without TCP_NODELAY, an answer written after the SSE priming event
    // waits for the client's delayed ACK (Nagle): 40 ms on every call of a
    // client or proxy that keeps its connection open (`clix-bench mcp-scale
    // --keep-alive` measured 180 calls/s behind nginx's upstream keepalive).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "cannot set TCP_NODELAY on an MCP connection");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            shutdown.cancel();
        })
        .await
        .map_err(|e| ServeError(format!("HTTP server failed: {e}")))
}

/// Which `Origin` headers may reach the server: loopback ones, the listed
/// ones, and requests without one (clients that are not browsers).
#[derive(Debug, Default)]
struct OriginPolicy {
    allowed: Vec<Origin>,
    /// `--allow-origin null`: the opaque origin of sandboxed frames and files.
    null: bool,
}

impl OriginPolicy {
    fn new(listed: &[String]) -> Self {
        OriginPolicy {
            allowed: listed.iter().filter_map(|o| Origin::parse(o)).collect(),
            null: listed.iter().any(|o| o == "null"),
        }
    }

    /// The first refused `Origin` value of a request, if any.
    fn refused<'a>(&self, headers: &'a HeaderMap) -> Option<&'a [u8]> {
        headers.get_all(header::ORIGIN).iter().map(|v| v.as_bytes()).find(|value| !self.allows(value))
    }

    fn allows(&self, value: &[u8]) -> bool {
        let Ok(value) = std::str::from_utf8(value) else { return false };
        let value = value.trim();
        if value == "null" {
            return self.null;
        }
        Origin::parse(value).is_some_and(|origin| origin.is_loopback() || self.allowed.contains(&origin))
    }
}

/// An origin as RFC 6454 compares them: scheme and host lowercased, the
/// port made explicit (80 for http, 443 for https).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    /// IPv6 addresses keep their brackets.
    host: String,
    port: Option<u16>,
}

impl Origin {
    /// `scheme://host[:port]`, nothing after it; `None` otherwise.
    fn parse(text: &str) -> Option<Origin> {
        let (scheme, authority) = text.split_once("://")?;
        let valid_scheme = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if !valid_scheme || authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ', '\\']) {
            return None;
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (inside, after) = v6.split_once(']')?;
                inside.parse::<std::net::Ipv6Addr>().ok()?;
                (format!("[{inside}]"), after)
            }
            None => match authority.rfind(':') {
                Some(at) => (authority[..at].to_string(), &authority[at..]),
                None => (authority.to_string(), ""),
            },
        };
        let port = match port {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse::<u16>().ok()?),
        };
        if host.is_empty() || (host.contains(':') && !host.starts_with('[')) {
            return None;
        }
        let scheme = scheme.to_ascii_lowercase();
        let default = match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        };
        Some(Origin { host: host.to_ascii_lowercase(), port: port.or(default), scheme })
    }

    /// http or https on localhost, 127.0.0.0/8 or [::1], any port.
    fn is_loopback(&self) -> bool {
        if self.scheme != "http" && self.scheme != "https" {
            return false;
        }
        match self.host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok_and(|ip| ip.is_loopback()),
            None => {
                self.host == "localhost" || self.host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
            }
        }
    }
}

/// Refuses a browser request from a site that is not allowed (a page that
/// rebinds its own name to 127.0.0.1 would otherwise reach the shell).
async fn check_origin(State(policy): State<Arc<OriginPolicy>>, request: Request, next: Next) -> Response {
    let Some(origin) = policy.refused(request.headers()) else { return next.run(request).await };
    let shown: String = String::from_utf8_lossy(origin).chars().take(200).collect();
    let message = format!(
        "Forbidden: requests from Origin {shown} are refused (only loopback origins are allowed, against DNS \
         rebinding); to allow this one, start the server with clix mcp --allow-origin {shown}"
    );
    json_error(StatusCode::FORBIDDEN, &message)
}

/// The open sessions, and how many may be.
struct SessionCap {
    sessions: Arc<RoutedSessions>,
    max: usize,
}

/// Refuses to start a session past the cap: each holds a shell and its
/// in-memory files until it ends or idles out, and a server that ran out
/// of memory would end every session, not just the newest.
async fn limit_sessions(State(cap): State<Arc<SessionCap>>, request: Request, next: Next) -> Response {
    let opens_one = request.method() == axum::http::Method::POST && !request.headers().contains_key("mcp-session-id");
    if opens_one {
        let open = cap.sessions.local.sessions.read().await.len();
        if open >= cap.max {
            let message = format!(
                "Service Unavailable: this server already holds {open} sessions (--max-sessions {}). Close one \
                 (an MCP client's DELETE), wait for idle ones to close (--idle-timeout), or restart the server \
                 with a higher --max-sessions",
                cap.max
            );
            return json_error(StatusCode::SERVICE_UNAVAILABLE, &message);
        }
    }
    next.run(request).await
}

/// A JSON-RPC error body (what MCP clients show) with an HTTP status.
fn json_error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message}});
    let headers = [(header::CONTENT_TYPE, "application/json"), CLOSE];
    (status, headers, body.to_string()).into_response()
}

/// On a refusal, whose request body is never read: the server then closes
/// the connection, and a client that reused it for its next request would
/// see it drop without an answer. Saying so makes it open a new one.
const CLOSE: (header::HeaderName, &str) = (header::CONNECTION, "close");

/// Rejects a request without `Authorization: Bearer <token>`.
async fn bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    if authorized(request.headers(), &token) {
        next.run(request).await
    } else {
        (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer"), CLOSE], "missing or wrong bearer token\n")
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

    fn options(token: &str) -> HttpOptions {
        HttpOptions {
            addr: "0.0.0.0:8765".parse().unwrap(),
            token: token.into(),
            idle: Duration::from_secs(1),
            max_sessions: 4,
            allowed_origins: Vec::new(),
            route: None,
        }
    }

    #[test]
    fn every_listener_needs_a_token_and_room_for_a_session() {
        assert!(options("  ").check().unwrap_err().0.contains("token must not be empty"));
        let guarded = options("s3cret-token");
        assert!(guarded.check().is_ok());
        assert!(!format!("{guarded:?}").contains("s3cret"), "the token never shows: {guarded:?}");
        let none = HttpOptions { max_sessions: 0, ..guarded };
        assert!(none.check().unwrap_err().0.contains("--max-sessions"));
    }

    #[test]
    fn loopback_origins_pass_others_only_when_listed() {
        let policy = OriginPolicy::new(&["https://App.Example.com".into(), "http://10.0.0.5:3000".into()]);
        for ok in [
            "http://localhost:1234",
            "https://LOCALHOST",
            "http://127.0.0.1:8765",
            "http://127.45.0.9",
            "http://[::1]:80",
            "https://app.example.com",
            "https://app.example.com:443",
            "http://10.0.0.5:3000",
        ] {
            assert!(policy.allows(ok.as_bytes()), "{ok}");
        }
        for refused in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "ftp://localhost",
            "http://app.example.com",
            "https://app.example.com:8443",
            "http://10.0.0.5",
            "http://[::2]",
            "null",
            "http://localhost/path",
            "localhost",
            "",
        ] {
            assert!(!policy.allows(refused.as_bytes()), "{refused}");
        }
        assert!(OriginPolicy::new(&["null".into()]).allows(b"null"));
        assert!(!policy.allows(b"http://localhost\xff"));
    }

    #[test]
    fn an_allowed_origin_must_be_an_origin() {
        let options = |origin: &str| HttpOptions { allowed_origins: vec![origin.into()], ..options("t") };
        assert!(options("https://app.example.com").check().is_ok());
        assert!(options("null").check().is_ok());
        for bad in ["app.example.com", "https://app.example.com/", "https://x:99999", "*"] {
            assert!(options(bad).check().unwrap_err().0.contains("--allow-origin"), "{bad}");
        }
    }
}

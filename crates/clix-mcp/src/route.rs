//! `--route NAME`: every MCP session id this replica issues ends with
//! `.NAME`, so a load balancer in front of several replicas can send each
//! request to the replica that holds its session by reading the id alone
//! (Tomcat's `jvmRoute`, nginx-plus's `sticky route`).
//!
//! Hashing the `Mcp-Session-Id` header cannot do this: `initialize` has no
//! id yet, so it goes to any replica, and the id that replica issues then
//! hashes to any replica; about half the sessions' next request would reach
//! one that never issued the id and get 404 "Session not found".
//!
//! The sessions themselves are rmcp's in-memory ones; only the id differs.

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::common::server_side_http::{ServerSseMessage, session_id};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, create_local_session,
};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionId, SessionManager};

use crate::ServeError;

/// The longest route name: it rides in every request's header.
const MAX_LEN: usize = 32;

/// A checked route name: 1 to 32 ASCII letters, digits, `-` or `_`, so the
/// suffix is plain in a header and in a load balancer's pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route(String);

impl Route {
    /// `name` if it can end a session id; a message saying why not otherwise.
    pub fn parse(name: &str) -> Result<Route, ServeError> {
        let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if name.is_empty() || name.len() > MAX_LEN || !plain {
            let shown: String = name.chars().take(MAX_LEN + 8).collect();
            return Err(ServeError(format!(
                "--route {shown:?} is not a route name: give 1 to {MAX_LEN} ASCII letters, digits, '-' or '_', \
                 e.g. --route r1 (every session id this replica issues ends with '.NAME', and the load balancer \
                 sends a request to the replica its id names)"
            )));
        }
        Ok(Route(name.to_string()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// rmcp's in-memory sessions, whose ids end with `.NAME` when a route is set.
#[derive(Debug, Default)]
pub(crate) struct RoutedSessions {
    pub(crate) local: LocalSessionManager,
    /// `.NAME`, or `None` for rmcp's own ids.
    suffix: Option<String>,
}

impl RoutedSessions {
    pub(crate) fn new(local: LocalSessionManager, route: Option<&Route>) -> Self {
        RoutedSessions { local, suffix: route.map(|r| format!(".{}", r.as_str())) }
    }
}

impl SessionManager for RoutedSessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let Some(suffix) = &self.suffix else { return self.local.create_session().await };
        // What LocalSessionManager::create_session does, with the id ours.
        let id: SessionId = format!("{}{suffix}", session_id()).into();
        let (handle, worker) = create_local_session(id.clone(), self.local.session_config.clone());
        self.local.sessions.write().await.insert(id.clone(), handle);
        Ok((id, WorkerTransport::spawn(worker)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.resume(id, last_event_id).await
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.local.restore_session(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_a_short_plain_name() {
        for ok in ["r1", "R-2", "eu_west-1a", &"x".repeat(MAX_LEN)] {
            assert_eq!(Route::parse(ok).unwrap().as_str(), ok);
        }
        for bad in ["", "r.1", "r 1", "r/1", "é", "r1\n", &"x".repeat(MAX_LEN + 1)] {
            let e = Route::parse(bad).unwrap_err().0;
            assert!(e.contains("is not a route name") && e.contains("--route r1"), "{bad:?}: {e}");
        }
    }

    #[tokio::test]
    async fn issued_ids_end_with_the_route_and_stay_unique() {
        let routed = RoutedSessions::new(LocalSessionManager::default(), Some(&Route::parse("r7").unwrap()));
        let (a, _ta) = routed.create_session().await.unwrap();
        let (b, _tb) = routed.create_session().await.unwrap();
        assert!(a.ends_with(".r7") && b.ends_with(".r7") && a != b, "{a} {b}");
        assert!(routed.has_session(&a).await.unwrap() && routed.has_session(&b).await.unwrap());
        routed.close_session(&a).await.unwrap();
        assert!(!routed.has_session(&a).await.unwrap());

        let plain = RoutedSessions::new(LocalSessionManager::default(), None);
        let (c, _tc) = plain.create_session().await.unwrap();
        assert!(!c.contains('.') && plain.has_session(&c).await.unwrap(), "rmcp's own id: {c}");
    }
}

//! `clix mcp` serving until it is stopped: on a multi-threaded runtime of
//! its own, so HTTP sessions run in parallel and a busy line never holds
//! up reading a cancel over stdio (the CLI's own runtime has one thread).

use std::future::Future;
use std::net::SocketAddr;

use crate::{HttpOptions, ServeConfig, ServeError, serve_http, serve_stdio};

/// Serves `config` over HTTP when `http` is given (`ready` gets the bound
/// address), else over stdio; returns when the server stops.
pub fn serve(
    config: ServeConfig,
    http: Option<HttpOptions>,
    ready: impl FnOnce(SocketAddr) + Send + 'static,
) -> Result<(), ServeError> {
    on_multi_thread(async move {
        match http {
            Some(options) => serve_http(config, options, ready).await,
            None => serve_stdio(config).await,
        }
    })?
}

/// Runs `future` to completion on a multi-threaded runtime of its own,
/// from a thread of its own.
fn on_multi_thread<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> Result<T, ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("clix-mcp")
        .build()
        .map_err(|e| ServeError(format!("cannot start the async runtime: {e}")))?;
    let thread = std::thread::Builder::new()
        .name("clix-mcp".into())
        .spawn(move || {
            let out = runtime.block_on(future);
            // Tasks still running (a line at stdin EOF) are dropped, not awaited.
            runtime.shutdown_background();
            out
        })
        .map_err(|e| ServeError(format!("cannot start the server thread: {e}")))?;
    thread.join().map_err(|_| ServeError("the MCP server panicked".into()))
}

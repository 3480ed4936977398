//! `clix mcp --http` as a child process, and a bare HTTP `initialize` to
//! it: what the origin, token and secret tests all need, written once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The token of every test server whose test gives none (CLIX_MCP_TOKEN).
pub(crate) const TOKEN: &str = "test-token-7c41";
/// The header that carries [`TOKEN`].
pub(crate) const AUTHORIZATION: (&str, &str) = ("Authorization", "Bearer test-token-7c41");

/// A running `clix mcp --http …`; killed on drop.
pub(crate) struct HttpServer {
    pub(crate) child: Child,
    /// `http://127.0.0.1:PORT/mcp`, a wildcard listen address made loopback.
    pub(crate) url: String,
    /// The two lines said after the URL: how clients authenticate, and what
    /// the sessions may hold.
    pub(crate) said: String,
}

impl HttpServer {
    /// Spawns `cmd` (already `mcp --http ADDR …`, with [`TOKEN`] unless it
    /// sets CLIX_MCP_TOKEN) and reads the URL from its first stderr line and
    /// the two lines after it; the rest of stderr is drained. Panics with what it said when it did
    /// not serve.
    pub(crate) fn start(cmd: &mut Command) -> HttpServer {
        if !cmd.get_envs().any(|(name, _)| name == "CLIX_MCP_TOKEN") {
            cmd.env("CLIX_MCP_TOKEN", TOKEN);
        }
        let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let Some(url) = line.trim().strip_prefix("clix mcp: serving ") else {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            let _ = child.kill();
            panic!("did not serve: {line}{rest}");
        };
        let url = url.replace("0.0.0.0", "127.0.0.1");
        let mut said = String::new();
        for _ in 0..2 {
            stderr.read_line(&mut said).unwrap();
        }
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer { child, url, said }
    }

    /// POSTs an MCP `initialize` with these extra headers; the status code
    /// and, unless it is 200 (an event stream), the body.
    pub(crate) fn initialize(&self, headers: &[(&str, &str)]) -> (u16, String) {
        let (code, _, body) = self.exchange(headers);
        (code, body)
    }

    /// The same request: the status code, the response's header lines
    /// (lowercased) and, unless it is 200, the body (read to the end of the
    /// connection, which the request closes unless `headers` say otherwise).
    pub(crate) fn exchange(&self, headers: &[(&str, &str)]) -> (u16, String, String) {
        let rest = self.url.strip_prefix("http://").unwrap();
        let (addr, path) = rest.split_once('/').unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"http-test","version":"0"}}}"#;
        let mut lines: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("connection")) {
            lines.push_str("Connection: close\r\n");
        }
        let request = format!(
            "POST /{path} HTTP/1.1\r\nHost: {addr}\r\n{lines}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut stream = TcpStream::connect(addr).unwrap();
        // A safety net, not a figure: the answer ends the wait (a session is
        // made for it, which a busy machine may take a while to do).
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let code: u16 = status.split_whitespace().nth(1).unwrap_or_else(|| panic!("{status:?}")).parse().unwrap();
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            head.push_str(&line.to_ascii_lowercase());
        }
        if code == 200 {
            return (code, head, String::new());
        }
        let mut body = String::new();
        let _ = reader.read_to_string(&mut body);
        (code, head, body)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

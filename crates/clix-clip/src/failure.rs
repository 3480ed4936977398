//! Why an environment could not be reached, told from what the client
//! said, with what to check.

use crate::config::{Environment, Target};

/// What failed when reaching an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The host name does not resolve.
    Dns,
    /// Nothing listens on the port.
    Refused,
    /// No answer in time.
    Timeout,
    /// The host refused the key (or there is none).
    Auth,
    /// The host's key is unknown or changed.
    HostKey,
    /// The container or pod does not exist or is not running.
    NotRunning,
    /// The client program (`ssh`, `docker`, `kubectl`) is not installed.
    NoClient(String),
    /// The local folder or the sandbox is not there.
    Local(String),
    /// Something else; the client's own words.
    Other(String),
}

/// One rule of the classification: a stderr that holds a phrase of each
/// group (lower case) is this failure.
struct Rule {
    all: &'static [&'static [&'static str]],
    failure: fn(&str) -> Failure,
}

/// ssh's own errors, in order. ssh exits 255 for them; other codes are the
/// remote command's, whatever it printed.
const SSH: &[Rule] = &[
    Rule {
        all: &[&["could not resolve hostname", "name or service not known", "temporary failure in name"]],
        failure: |_| Failure::Dns,
    },
    Rule { all: &[&["connection refused"]], failure: |_| Failure::Refused },
    Rule { all: &[&["timed out", "no route to host", "network is unreachable"]], failure: |_| Failure::Timeout },
    Rule {
        all: &[&["host key verification failed", "remote host identification has changed"]],
        failure: |_| Failure::HostKey,
    },
    Rule {
        all: &[&["permission denied", "too many authentication failures", "no supported authentication"]],
        failure: |_| Failure::Auth,
    },
    Rule {
        all: &[&["connection closed", "connection reset", "kex_exchange_identification", "broken pipe"]],
        failure: |stderr| Failure::Other(first_line(stderr)),
    },
];

/// The container engine's own errors, in order. Only its own wording
/// counts: the command's stderr may well say "connection refused" or "is
/// not running" about something else.
const CONTAINER: &[Rule] = &[
    Rule {
        all: &[
            &["error response from daemon", "error: no such object", "error: no such container"],
            &["no such container", "is not running", "no such object"],
        ],
        failure: |_| Failure::NotRunning,
    },
    Rule {
        all: &[&["cannot connect to the docker daemon", "cannot connect to podman"]],
        failure: |_| Failure::Refused,
    },
    Rule { all: &[&["permission denied while trying to connect to the docker daemon"]], failure: |_| Failure::Auth },
];

/// kubectl's words for not reaching the API server at all.
const SERVER: &[&str] = &["unable to connect to the server", "the connection to the server"];

/// kubectl's own errors, in order.
const KUBERNETES: &[Rule] = &[
    Rule {
        all: &[&["error from server (notfound)", "container not found", "unable to upgrade connection"]],
        failure: |_| Failure::NotRunning,
    },
    Rule { all: &[SERVER, &["no such host"]], failure: |_| Failure::Dns },
    Rule { all: &[SERVER, &["i/o timeout", "timed out", "deadline exceeded"]], failure: |_| Failure::Timeout },
    Rule { all: &[SERVER], failure: |_| Failure::Refused },
    Rule {
        all: &[&["error from server (forbidden)", "(unauthorized)", "you must be logged in"]],
        failure: |_| Failure::Auth,
    },
];

impl Failure {
    /// Reads a client's stderr (and exit code) after a failed connection;
    /// `None` when it does not look like a connection failure.
    pub fn classify(env: &Environment, exit_code: i32, stderr: &str) -> Option<Failure> {
        let rules = match &env.target {
            Target::Ssh(_) if exit_code == crate::UNREACHABLE_EXIT => SSH,
            Target::Container(_) => CONTAINER,
            Target::Kubernetes(_) => KUBERNETES,
            Target::Ssh(_) | Target::Local(_) => return None,
        };
        let low = stderr.to_ascii_lowercase();
        let rule = rules.iter().find(|r| r.all.iter().all(|group| group.iter().any(|p| low.contains(p))))?;
        Some((rule.failure)(stderr))
    }

    /// One short phrase: `DNS`, `connection refused`, `authentication`.
    pub fn label(&self) -> String {
        match self {
            Failure::Dns => "DNS: the host name does not resolve".into(),
            Failure::Refused => "connection refused".into(),
            Failure::Timeout => "timed out connecting".into(),
            Failure::Auth => "authentication refused".into(),
            Failure::HostKey => "host key not trusted".into(),
            Failure::NotRunning => "not running".into(),
            Failure::NoClient(program) => format!("{program} is not installed"),
            Failure::Local(why) => why.clone(),
            Failure::Other(words) => words.clone(),
        }
    }

    /// What the person should check, for this environment.
    pub fn check(&self, env: &Environment) -> String {
        let name = &env.name;
        match (self, &env.target) {
            (Failure::Dns, Target::Ssh(s)) => {
                format!("check `host = \"{}\"` in the [[clip]] entry {name}, and this machine's DNS", s.host)
            }
            (Failure::Refused, Target::Ssh(s)) => format!(
                "is sshd running on {} and listening on port {}? check `host`/`port` of [[clip]] {name}",
                s.host,
                s.port.unwrap_or(22)
            ),
            (Failure::Timeout, Target::Ssh(s)) => {
                format!("is {} up, and does a firewall let this machine reach its port?", s.host)
            }
            (Failure::Auth, Target::Ssh(s)) => format!(
                "the key was refused: check `user` ({}) and `identity_file` of [[clip]] {name}, and that the key is \
                 in the host's authorized_keys; clip never asks for a password (BatchMode)",
                s.user.as_deref().unwrap_or("ssh's default")
            ),
            (Failure::HostKey, Target::Ssh(s)) => format!(
                "{} is not in known_hosts or its key changed: connect once by hand (ssh {}) to check and record it",
                s.host, s.host
            ),
            (Failure::NotRunning, Target::Container(c)) => {
                format!("start it, or fix `container` of [[clip]] {name}: {} ps -a lists them", c.engine)
            }
            (Failure::Refused | Failure::Auth, Target::Container(c)) => {
                format!("is the {} daemon running, and may this user reach its socket?", c.engine)
            }
            (Failure::NotRunning, Target::Kubernetes(_)) => {
                format!("check `pod`/`selector`, `namespace` and `container` of [[clip]] {name}: kubectl get pods")
            }
            (Failure::NoClient(program), _) => format!("install {program} on this machine (it runs on the host)"),
            (_, Target::Kubernetes(_)) => {
                format!("check the cluster and `context` of [[clip]] {name}: kubectl cluster-info")
            }
            (Failure::Local(_), Target::Local(_)) => {
                format!("check `path` of [[clip]] {name}, and that the sandbox works: clix run 'sandbox status'")
            }
            _ => format!("check the [[clip]] entry {name} (clix config show)"),
        }
    }
}

fn first_line(text: &str) -> String {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("failed").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Container, Kubernetes, Pod, Shell, Ssh};

    fn env(target: Target) -> Environment {
        Environment { name: "box".into(), description: String::new(), shell: Shell::Bash, target }
    }

    fn target(kind: &str) -> Target {
        match kind {
            "ssh" => Target::Ssh(Ssh {
                host: "box.example".into(),
                user: None,
                port: None,
                identity_file: None,
                options: Vec::new(),
            }),
            "container" => Target::Container(Container { engine: "docker".into(), container: "web".into() }),
            "kubernetes" => Target::Kubernetes(Kubernetes {
                context: None,
                namespace: None,
                pod: Pod::Named("web-0".into()),
                container: None,
            }),
            _ => Target::Local("/srv/box".into()),
        }
    }

    /// kind, the client's exit code, what it printed, the failure read from it.
    type Row = (&'static str, i32, &'static str, Option<Failure>);

    /// What ssh, docker, podman and kubectl really print. Each phrase of
    /// the rules has a line in which it alone decides its group (checked
    /// below), so taking a phrase out of a rule fails its row.
    fn rows() -> Vec<Row> {
        use Failure::*;
        let other = |line: &str| Some(Other(line.to_string()));
        vec![
            ("ssh", 255, "ssh: Could not resolve hostname box.invalid: No address associated with hostname", Some(Dns)),
            ("ssh", 255, "nc: getaddrinfo for host \"box.invalid\" port 22: Name or service not known", Some(Dns)),
            (
                "ssh",
                255,
                "nc: getaddrinfo for host \"box.invalid\" port 22: Temporary failure in name resolution",
                Some(Dns),
            ),
            ("ssh", 255, "ssh: connect to host box.example port 2222: Connection refused", Some(Refused)),
            ("ssh", 255, "ssh: connect to host 10.0.0.5 port 22: Connection timed out", Some(Timeout)),
            ("ssh", 255, "ssh: connect to host 10.0.0.5 port 22: No route to host", Some(Timeout)),
            ("ssh", 255, "ssh: connect to host 10.0.0.5 port 22: Network is unreachable", Some(Timeout)),
            ("ssh", 255, "Host key verification failed.", Some(HostKey)),
            ("ssh", 255, "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @", Some(HostKey)),
            ("ssh", 255, "deploy@box.example: Permission denied (publickey,password).", Some(Auth)),
            ("ssh", 255, "Received disconnect from 10.0.0.5 port 22:2: Too many authentication failures", Some(Auth)),
            ("ssh", 255, "No supported authentication methods available (server sent: publickey)", Some(Auth)),
            ("ssh", 255, "Connection closed by 10.0.0.5 port 22", other("Connection closed by 10.0.0.5 port 22")),
            ("ssh", 255, "Connection reset by 10.0.0.5 port 22", other("Connection reset by 10.0.0.5 port 22")),
            (
                "ssh",
                255,
                "kex_exchange_identification: banner line contains invalid characters",
                other("kex_exchange_identification: banner line contains invalid characters"),
            ),
            (
                "ssh",
                255,
                "client_loop: send disconnect: Broken pipe",
                other("client_loop: send disconnect: Broken pipe"),
            ),
            // Any other exit code is the remote command's, whatever it says.
            ("ssh", 1, "deploy@box.example: Permission denied (publickey,password).", None),
            ("ssh", 255, "bash: line 1: deploy: command not found", None),
            ("container", 1, "Error response from daemon: No such container: web", Some(NotRunning)),
            ("container", 1, "Error response from daemon: Container 4f2a9c1e0b7d is not running", Some(NotRunning)),
            ("container", 1, "Error: No such object: web", Some(NotRunning)),
            ("container", 1, "Error: No such container:path: web:/var/log/app", Some(NotRunning)),
            (
                "container",
                1,
                "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
                Some(Refused),
            ),
            (
                "container",
                125,
                "Cannot connect to Podman. Please verify your connection to the Linux system using `podman system \
                 connection list`, or try `podman machine init` and `podman machine start` to manage a new Linux VM",
                Some(Refused),
            ),
            (
                "container",
                1,
                "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: \
                 Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.24/containers/web/json\": dial unix \
                 /var/run/docker.sock: connect: permission denied",
                Some(Auth),
            ),
            // The command's own words, not the engine's.
            ("container", 1, "nginx is not running", None),
            ("container", 7, "curl: (7) Failed to connect to localhost port 80: Connection refused", None),
            ("kubernetes", 1, "Error from server (NotFound): pods \"web-0\" not found", Some(NotRunning)),
            ("kubernetes", 1, "error: unable to upgrade connection: pod does not exist", Some(NotRunning)),
            ("kubernetes", 1, "Error from server: container not found (\"app\")", Some(NotRunning)),
            (
                "kubernetes",
                1,
                "Unable to connect to the server: dial tcp: lookup k8s.example.invalid on 127.0.0.53:53: no such host",
                Some(Dns),
            ),
            ("kubernetes", 1, "Unable to connect to the server: dial tcp 10.0.0.9:6443: i/o timeout", Some(Timeout)),
            (
                "kubernetes",
                1,
                "Unable to connect to the server: dial tcp 10.0.0.9:6443: connect: connection timed out",
                Some(Timeout),
            ),
            ("kubernetes", 1, "Unable to connect to the server: context deadline exceeded", Some(Timeout)),
            (
                "kubernetes",
                1,
                "The connection to the server k8s.example:6443 was refused - did you specify the right host or port?",
                Some(Refused),
            ),
            (
                "kubernetes",
                1,
                "Unable to connect to the server: x509: certificate signed by unknown authority",
                Some(Refused),
            ),
            (
                "kubernetes",
                1,
                "Error from server (Forbidden): pods \"web-0\" is forbidden: User \"dev\" cannot create resource \
                 \"pods/exec\" in API group \"\" in the namespace \"prod\"",
                Some(Auth),
            ),
            (
                "kubernetes",
                1,
                "Error from server (Unauthorized): the server has asked for the client to provide credentials",
                Some(Auth),
            ),
            (
                "kubernetes",
                1,
                "error: You must be logged in to the server (the server has asked for the client to provide \
                 credentials)",
                Some(Auth),
            ),
            ("kubernetes", 1, "grep: /var/log/app.log: No such file or directory", None),
            // A local folder's failures are the sandbox's, never read from stderr.
            ("local", 255, "ssh: connect to host box port 22: Connection refused", None),
        ]
    }

    #[test]
    fn each_client_line_is_read_as_its_failure() {
        for (kind, exit_code, line, want) in rows() {
            let got = Failure::classify(&env(target(kind)), exit_code, line);
            assert_eq!(got, want, "{kind} (exit {exit_code}): {line}");
        }
    }

    /// Every phrase has a row in which it is the only phrase of its group
    /// and a rule with that group decides the failure: a phrase added to a
    /// rule without a row fails here, and taking one out fails its row above.
    #[test]
    fn every_phrase_has_a_row_of_its_own() {
        let rows = rows();
        for (kind, rules) in [("ssh", SSH), ("container", CONTAINER), ("kubernetes", KUBERNETES)] {
            for group in rules.iter().flat_map(|rule| rule.all) {
                for phrase in *group {
                    let alone = rows.iter().any(|(k, code, line, want)| {
                        let low = line.to_ascii_lowercase();
                        let by_this_group =
                            rules.iter().any(|r| r.all.contains(group) && *want == Some((r.failure)(line)));
                        *k == kind
                            && by_this_group
                            && Failure::classify(&env(target(kind)), *code, line) == *want
                            && group.iter().filter(|p| low.contains(*p)).eq([phrase])
                    });
                    assert!(alone, "{kind}: no row where \"{phrase}\" alone decides its group");
                }
            }
        }
    }
}

//! A tiny SMTP server on 127.0.0.1:0 for tests. It speaks just enough of RFC
//! 5321 for lettre (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT, and AUTH PLAIN or
//! LOGIN when started with [`SmtpServer::with_auth`]), records every session
//! with its full message and every AUTH line, and counts accepted TCP
//! connections, so a test can assert what went over the wire and that nothing
//! connected at all.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One completed mail transaction.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub ehlo: String,
    pub mail_from: String,
    pub rcpt_to: Vec<String>,
    /// The message as sent (dot-stuffing undone), CRLF line ends.
    pub data: String,
}

impl Session {
    /// Header lines (before the first empty line) named `name`, any case.
    pub fn header_values(&self, name: &str) -> Vec<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or("");
        head.split("\r\n")
            .filter_map(|line| line.split_once(':'))
            .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .collect()
    }
}

#[derive(Default)]
struct Shared {
    sessions: Mutex<Vec<Session>>,
    connections: AtomicUsize,
    /// Replies to use for the next DATA ends instead of `250`.
    data_replies: Mutex<Vec<String>>,
    auth: Option<Auth>,
    /// Every line the client sent during AUTH (command and continuations).
    auth_lines: Mutex<Vec<String>>,
}

/// The final answer to an AUTH exchange, given the lines the client sent.
pub type AuthReply = Box<dyn Fn(&[String]) -> String + Send + Sync>;

struct Auth {
    /// Advertised in EHLO, e.g. `PLAIN` or `LOGIN`.
    mechanisms: String,
    reply: AuthReply,
}

/// A running server; stops when dropped.
pub struct SmtpServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SmtpServer {
    pub async fn start() -> Self {
        Self::start_with(Shared::default()).await
    }

    /// A server that advertises `AUTH <mechanisms>` and ends each AUTH exchange
    /// with `reply(lines)` (`235 ...` accepts; `535 ...` refuses). For LOGIN it
    /// first asks for the user name and the password (334 challenges).
    pub async fn with_auth(
        mechanisms: &str,
        reply: impl Fn(&[String]) -> String + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(Shared {
            auth: Some(Auth {
                mechanisms: mechanisms.to_owned(),
                reply: Box::new(reply),
            }),
            ..Shared::default()
        })
        .await
    }

    async fn start_with(shared: Shared) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind smtp listener");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(shared);
        let accept = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                accept.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, accept.clone()));
            }
        });
        Self { addr, shared, task }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Every line the client sent during AUTH exchanges, in order.
    pub fn auth_lines(&self) -> Vec<String> {
        self.shared.auth_lines.lock().unwrap().clone()
    }

    pub fn sessions(&self) -> Vec<Session> {
        self.shared.sessions.lock().unwrap().clone()
    }

    /// Answers the next DATA end with `reply` (e.g. `451 try later`).
    pub fn reply_to_next_data(&self, reply: &str) {
        self.shared
            .data_replies
            .lock()
            .unwrap()
            .push(reply.to_owned());
    }
}

async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let mut session = Session::default();
    if write
        .write_all(b"220 localhost test ESMTP\r\n")
        .await
        .is_err()
    {
        return;
    }
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let command = line.trim_end().to_owned();
        let verb = command
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        let reply: String = match verb.as_str() {
            "EHLO" | "HELO" => {
                session.ehlo = command[4..].trim().to_owned();
                match &shared.auth {
                    Some(auth) => format!(
                        "250-localhost\r\n250-8BITMIME\r\n250-AUTH {}\r\n250 SMTPUTF8",
                        auth.mechanisms
                    ),
                    None => "250-localhost\r\n250-8BITMIME\r\n250 SMTPUTF8".into(),
                }
            }
            "AUTH" if shared.auth.is_some() => {
                let mut sent = vec![command.clone()];
                if command.split_whitespace().count() == 2 {
                    // AUTH LOGIN: "Username:" and "Password:" challenges.
                    for challenge in ["334 VXNlcm5hbWU6\r\n", "334 UGFzc3dvcmQ6\r\n"] {
                        line.clear();
                        let asked = write.write_all(challenge.as_bytes()).await.is_ok();
                        if !asked || lines.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        sent.push(line.trim_end().to_owned());
                    }
                }
                shared.auth_lines.lock().unwrap().extend(sent.clone());
                (shared.auth.as_ref().unwrap().reply)(&sent)
            }
            "MAIL" => {
                session.mail_from = command[5..].trim().to_owned();
                "250 OK".into()
            }
            "RCPT" => {
                session.rcpt_to.push(command[5..].trim().to_owned());
                "250 OK".into()
            }
            "DATA" => {
                if write
                    .write_all(b"354 end with <CRLF>.<CRLF>\r\n")
                    .await
                    .is_err()
                {
                    return;
                }
                let mut data = String::new();
                loop {
                    line.clear();
                    if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    data.push_str(line.strip_prefix('.').unwrap_or(&line));
                }
                session.data = data;
                let mut sessions = shared.sessions.lock().unwrap();
                sessions.push(session.clone());
                let n = sessions.len();
                drop(sessions);
                session = Session {
                    ehlo: session.ehlo.clone(),
                    ..Session::default()
                };
                let scripted = {
                    let mut replies = shared.data_replies.lock().unwrap();
                    (!replies.is_empty()).then(|| replies.remove(0))
                };
                scripted.unwrap_or_else(|| format!("250 OK queued as test-{n}"))
            }
            "RSET" | "NOOP" => "250 OK".into(),
            "QUIT" => {
                let _ = write.write_all(b"221 bye\r\n").await;
                return;
            }
            _ => "502 command not implemented".into(),
        };
        if write
            .write_all(format!("{reply}\r\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}

//! Required-idempotency mail: a receipt enqueued with a delivery operation id is
//! delivered at most once per id, however often the producer retries.
//!
//! Generic SMTP cannot promise that (no provider-side idempotency), so duraq
//! refuses a required operation on it before anything is written. Resend's SMTP
//! relay honours a `Resend-Idempotency-Key` header for 24 hours; here the Resend
//! SMTP backend is pointed at a tiny SMTP listener this example starts on
//! 127.0.0.1 (plaintext is allowed to loopback only), which records what it got.
//!
//! Run: `cargo run -p duraq-examples --example mail`

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duraq_core::prelude::*;
use duraq_core::worker::WorkerEvent;
use duraq_core::{EnqueueOptions, Registry, Worker};
use duraq_mailer::{
    operation_key, DeliveryOperation, MailDeliverJob, MailPayload, Mailer, SmtpBackend,
    SmtpSettings, TlsMode,
};
use duraq_mailer_resend::ResendSmtpBackend;
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs on stderr (`RUST_LOG` filters, `info` by default): a failed delivery is a warning with the job, the attempt and the error.
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(
        dir.path().join("jobs.db"),
        SqliteOptions::default(),
    )?);
    let (port, received) = start_smtp_listener().await?;
    let local = || {
        SmtpSettings::new("127.0.0.1", port)
            .tls(TlsMode::None)
            .default_from("shop@example.com")
    };
    let receipt = MailPayload::new("Your receipt for order 42")
        .to("ada@example.com")
        .text("Thanks, Ada!");
    let op = || Some(DeliveryOperation::required("order-42:receipt"));

    // Generic SMTP is at-least-once: a required operation is refused up front.
    let generic = Mailer::new(store.clone(), Arc::new(SmtpBackend::new(local())?));
    let refused = generic
        .deliver_later(receipt.clone(), op(), EnqueueOptions::new())
        .await
        .unwrap_err();
    println!(
        "generic SMTP, required operation: refused, {}",
        refused.code()
    );

    // Resend SMTP (here: the local listener) advertises 24 h idempotency.
    let resend = Arc::new(ResendSmtpBackend::new(local())?);
    let mailer = Mailer::new(store.clone(), resend.clone());
    let first = mailer
        .deliver_later(receipt.clone(), op(), EnqueueOptions::new())
        .await?;
    println!("deliver_later order-42:receipt: {first:?}");
    // The producer retries (a timeout, a redeploy): the same job comes back.
    let replay = mailer
        .deliver_later(receipt.clone(), op(), EnqueueOptions::new())
        .await?;
    println!("replay of order-42:receipt: {replay:?}");
    assert_eq!(first.job_id(), replay.job_id());
    // The same id with other content is a conflict, never a second mail.
    let other = receipt.clone().text("Thanks, Bob!");
    let conflict = mailer
        .deliver_later(other, op(), EnqueueOptions::new())
        .await
        .unwrap_err();
    println!("same id, other content: refused, {}", conflict.code());

    // A worker runs the built-in duraq.mail.deliver job through the backend.
    let registry = Registry::new().register(MailDeliverJob::new(resend))?;
    let worker = Worker::builder(store.clone(), registry).build()?;
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !matches!(events.recv().await, Ok(WorkerEvent::Finished(f)) if f.job_id == first.job_id()) {}
    })
    .await?;
    handle.shutdown_and_join().await?;
    let job = store.get_job(first.job_id()).await?.ok_or("no job")?;
    println!(
        "worker: job {} is {} after {} attempt(s)",
        job.id,
        job.status.as_str(),
        job.attempts
    );

    // After delivery a replay still returns the job and sends nothing.
    let late = mailer
        .deliver_later(receipt, op(), EnqueueOptions::new())
        .await?;
    println!("replay after delivery: {late:?}");
    let operation = store
        .get_operation(&operation_key("order-42:receipt"))
        .await?
        .ok_or("no operation")?;
    println!("operation result: {}", operation.result.unwrap_or_default());

    let messages = received.lock().unwrap().clone();
    assert_eq!(messages.len(), 1);
    println!("the SMTP listener received {} message:", messages.len());
    for line in messages[0].lines().filter(|l| {
        l.starts_with("Subject:")
            || l.starts_with("To:")
            || l.starts_with("Resend-Idempotency-Key:")
    }) {
        println!("  {line}");
    }
    Ok(())
}

/// A minimal SMTP server on 127.0.0.1 (EHLO, MAIL, RCPT, DATA, QUIT): enough for
/// lettre, recording each message's text. Returns its port and the messages.
async fn start_smtp_listener() -> std::io::Result<(u16, Arc<Mutex<Vec<String>>>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let received = Arc::new(Mutex::new(Vec::new()));
    let messages = received.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let messages = messages.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                write.write_all(b"220 localhost ESMTP example\r\n").await?;
                while let Some(line) = lines.next_line().await? {
                    let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
                    let reply = match verb.as_str() {
                        "EHLO" | "HELO" => "250-localhost\r\n250 8BITMIME",
                        "DATA" => {
                            write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
                            let mut message = String::new();
                            while let Some(line) = lines.next_line().await? {
                                if line == "." {
                                    break;
                                }
                                message.push_str(line.strip_prefix('.').unwrap_or(&line)); // undo dot-stuffing
                                message.push('\n');
                            }
                            messages.lock().unwrap().push(message);
                            "250 OK queued"
                        }
                        "QUIT" => {
                            write.write_all(b"221 bye\r\n").await?;
                            break;
                        }
                        _ => "250 OK", // MAIL, RCPT, RSET, NOOP
                    };
                    write.write_all(format!("{reply}\r\n").as_bytes()).await?;
                }
                std::io::Result::Ok(())
            });
        }
    });
    Ok((port, received))
}

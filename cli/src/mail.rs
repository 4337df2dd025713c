//! `duraq mail send` and the worker's `duraq.mail.deliver` handler. Both pick
//! the mail backend from the environment (`DURAQ_MAIL_BACKEND` = `smtp`,
//! `resend-smtp` or `resend-api`, with each backend's own variables), so one
//! configuration serves the producer and the worker. Credentials are read from
//! the environment only and never printed.

use std::sync::Arc;

use anyhow::Result;
use clap::{ArgGroup, Args, Subcommand};
use duraq_core::{EnqueueOptions, EnqueueOutcome, MemoryStore, Registry, WorkerError};
use duraq_mailer::{
    DeliveryContext, DeliveryOperation, MailBackend, MailDeliverJob, MailError, MailPayload,
    Mailer, SmtpBackend, SmtpSettings,
};
use duraq_mailer_resend::{ResendApiBackend, ResendSmtpBackend};
use serde_json::json;

use crate::db::Database;
use crate::error::CliError;
use crate::output::print_json;

/// The variable that selects the mail backend.
pub const BACKEND_VAR: &str = "DURAQ_MAIL_BACKEND";

#[derive(Debug, Subcommand)]
pub enum MailCommand {
    /// Send one mail now, or enqueue it with `--later`; prints a JSON object.
    #[command(after_long_help = crate::examples::MAIL_SEND)]
    Send(SendArgs),
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("body").required(true).multiple(true).args(["html", "text"])))]
pub struct SendArgs {
    /// Recipient (repeatable).
    #[arg(long, value_name = "ADDRESS", required = true)]
    pub to: Vec<String>,
    /// Carbon-copy recipient (repeatable).
    #[arg(long, value_name = "ADDRESS")]
    pub cc: Vec<String>,
    /// Blind-copy recipient (repeatable).
    #[arg(long, value_name = "ADDRESS")]
    pub bcc: Vec<String>,
    /// Reply-To address (repeatable).
    #[arg(long, value_name = "ADDRESS")]
    pub reply_to: Vec<String>,
    /// Sender (default: `DURAQ_MAIL_FROM`).
    #[arg(long, value_name = "ADDRESS")]
    pub from: Option<String>,
    /// Subject line.
    #[arg(long)]
    pub subject: String,
    /// HTML body.
    #[arg(long)]
    pub html: Option<String>,
    /// Plain-text body.
    #[arg(long)]
    pub text: Option<String>,
    /// Extra header `Name: value` (repeatable).
    #[arg(long, value_name = "HEADER")]
    pub header: Vec<String>,
    /// Require idempotent delivery under this stable operation id: the same id and
    /// content is delivered once (within the provider's window; SMTP refuses it).
    #[arg(long, value_name = "ID")]
    pub operation_id: Option<String>,
    /// Enqueue a `duraq.mail.deliver` job instead of sending now.
    #[arg(long)]
    pub later: bool,
}

pub async fn run(db: &Database, cmd: MailCommand) -> Result<()> {
    let MailCommand::Send(a) = cmd;
    let payload = payload(&a)?;
    let operation = a.operation_id.clone().map(DeliveryOperation::required);
    let backend = backend_from_env()?.ok_or_else(|| {
        CliError::new(
            "mail-config-invalid",
            format!("{BACKEND_VAR} is not set (smtp, resend-smtp or resend-api)"),
        )
    })?;
    if a.later {
        let store = db.open().await?;
        let mailer = Mailer::new(store.clone(), backend);
        let outcome = crate::db::closing(&store, async {
            Ok(mailer
                .deliver_later(payload, operation, EnqueueOptions::new())
                .await
                .map_err(cli_error)?)
        })
        .await?;
        let replayed = matches!(outcome, EnqueueOutcome::Replayed(_));
        print_json(&json!({
            "jobId": outcome.job_id(),
            "replayed": replayed,
            "deduplicated": false,
        }));
    } else {
        // A direct send touches no job store.
        let mailer = Mailer::new(Arc::new(MemoryStore::new()), backend);
        let delivered = mailer
            .deliver_now(payload, operation, DeliveryContext::standalone())
            .await
            .map_err(cli_error)?;
        print_json(
            &json!({ "delivered": true, "providerMessageId": delivered.provider_message_id }),
        );
    }
    Ok(())
}

/// Registers `duraq.mail.deliver` when a mail backend is configured; without
/// `DURAQ_MAIL_BACKEND` the worker leaves mail jobs for a worker that has one.
/// A broken mail configuration stops the worker at start (`invalid-worker-config`).
pub fn register(registry: &mut Registry) -> Result<(), WorkerError> {
    let backend = backend_from_env().map_err(|e| WorkerError::InvalidConfig(format!("{e:#}")))?;
    if let Some(backend) = backend {
        *registry = std::mem::take(registry).register(MailDeliverJob::new(backend))?;
    }
    Ok(())
}

/// The backend named by `DURAQ_MAIL_BACKEND`, configured from the environment.
pub fn backend_from_env() -> Result<Option<Arc<dyn MailBackend>>> {
    let Some(kind) = std::env::var(BACKEND_VAR)
        .ok()
        .filter(|k| !k.trim().is_empty())
    else {
        return Ok(None);
    };
    let backend: Arc<dyn MailBackend> = match kind.trim() {
        "smtp" => {
            let settings =
                SmtpSettings::from_lookup(|k| std::env::var(k).ok()).map_err(cli_error)?;
            Arc::new(SmtpBackend::new(settings).map_err(cli_error)?)
        }
        "resend-smtp" => Arc::new(ResendSmtpBackend::from_env().map_err(cli_error)?),
        "resend-api" => Arc::new(ResendApiBackend::from_env().map_err(cli_error)?),
        other => {
            return Err(CliError::new(
                "mail-config-invalid",
                format!("{BACKEND_VAR}={other:?}: expected smtp, resend-smtp or resend-api"),
            )
            .into())
        }
    };
    Ok(Some(backend))
}

fn payload(a: &SendArgs) -> Result<MailPayload> {
    let mut p = MailPayload::new(a.subject.clone());
    p.to = a.to.clone();
    p.cc = a.cc.clone();
    p.bcc = a.bcc.clone();
    p.reply_to = a.reply_to.clone();
    p.from = a.from.clone();
    p.html = a.html.clone();
    p.text = a.text.clone();
    for h in &a.header {
        let (name, value) = h.split_once(':').ok_or_else(|| {
            CliError::new(
                "mail-invalid-payload",
                format!("--header expects `Name: value`, got {h:?}"),
            )
        })?;
        p.headers
            .insert(name.trim().to_owned(), value.trim().to_owned());
    }
    Ok(p)
}

/// Mail errors keep their stable codes on the command line.
fn cli_error(e: MailError) -> CliError {
    CliError::new(e.code(), e.to_string())
}

//! Rendering: the included items as the messages a provider receives, each with its recipe part
//! (what a stored record it was read from), replaying a recipe from the stored records, and
//! the meter's line.

use super::candidates::{message, Part};
use super::{BudgetMeter, PlanInput, RecipePart, SystemPrompt};
use crate::components::ambient::Ambient;
use crate::components::attachments::Attachments;
use crate::components::efforts::Efforts;
use crate::model::LogRef;
use crate::model::{ContextMessage, Message, Role};

/// Appends one included item's messages and its recipe part.
pub(super) fn render(
    input: &PlanInput<'_>,
    part: &Part,
    messages: &mut Vec<ContextMessage>,
    recipe: &mut Vec<RecipePart>,
) {
    match part {
        Part::System => {
            messages.push(message(Role::System, input.system.text));
            recipe.push(RecipePart::System {
                hash: input.system.hash.to_string(),
            });
        }
        Part::Summary(index) => {
            let effort = input.efforts.at(*index);
            if let Some(summary) = &effort.summary {
                messages.push(message(Role::System, &summary.rendered));
                recipe.push(RecipePart::Summary {
                    effort: effort.id.clone(),
                    text: summary.text.clone(),
                });
            }
        }
        Part::Ambient(positions) => {
            let stored = input.ambient.messages();
            for &p in positions {
                messages.push(message(stored[p].role, &stored[p].content));
            }
            recipe.push(RecipePart::Messages {
                log: LogRef::Ambient,
                seqs: positions.iter().map(|&p| stored[p].seq).collect(),
            });
        }
        Part::Log { effort, first } => {
            let effort = input.efforts.at(*effort);
            messages.push(message(Role::System, &effort.header));
            recipe.push(RecipePart::Header {
                effort: effort.id.clone(),
            });
            let kept: Vec<&Message> = effort.messages[*first..]
                .iter()
                .filter(|m| !input.compaction.turn_compacted(&effort.id, m.turn))
                .collect();
            messages.extend(kept.iter().map(|m| message(m.role, &m.content)));
            if !kept.is_empty() {
                recipe.push(RecipePart::Messages {
                    log: LogRef::Effort(effort.id.clone()),
                    seqs: kept.iter().map(|m| m.seq).collect(),
                });
            }
        }
        Part::Attachment(id) => {
            if let Some(stored) = input.attachments.by_id().get(id) {
                messages.push(message(Role::User, &stored.attachment.context_text()));
                recipe.push(RecipePart::Attachment {
                    id: id.clone(),
                    mode: stored.attachment.mode,
                });
            }
        }
        Part::Rolling => {
            if let Some(rolling) = input.compaction.rolling.as_ref() {
                messages.push(message(Role::System, &rolling.rendered));
                recipe.push(RecipePart::Rolling {
                    text: rolling.rendered.clone(),
                });
            }
        }
        Part::Excerpt { auto, index } => {
            let excerpt = if *auto {
                input
                    .recall
                    .auto
                    .as_ref()
                    .and_then(|a| a.excerpts.get(*index))
            } else {
                input.recall.focused.get(*index).map(|f| &f.excerpt)
            };
            let Some(excerpt) = excerpt else {
                return;
            };
            messages.push(message(Role::System, &excerpt.header));
            let texts = super::recalled::sources(input);
            for &key in &excerpt.keys {
                if let Some(text) = texts.text(excerpt.source, key) {
                    messages.push(message(text.role, text.text));
                }
            }
            let attachment = super::recalled::attachment_id(excerpt.source);
            recipe.push(RecipePart::Recalled {
                header: excerpt.header.clone(),
                log: match excerpt.source {
                    crate::recall::Source::Ambient => Some(LogRef::Ambient),
                    crate::recall::Source::Effort(i) => input
                        .efforts
                        .all()
                        .get(i as usize)
                        .map(|e| LogRef::Effort(e.id.clone())),
                    crate::recall::Source::Attachment(_) => None,
                },
                keys: excerpt
                    .keys
                    .iter()
                    .map(|&(seq, part)| {
                        if attachment.is_some() {
                            u64::from(part)
                        } else {
                            seq
                        }
                    })
                    .collect(),
                attachment,
            });
        }
        Part::Pending => {
            if let Some((text, _)) = input.pending {
                messages.push(message(Role::User, text));
                recipe.push(RecipePart::Pending {
                    text: text.to_string(),
                });
            }
        }
    }
}

/// Rebuilds a request's messages from a stored recipe, reading every part from the stored
/// records.
pub(crate) fn replay(
    system: &SystemPrompt<'_>,
    efforts: &Efforts,
    ambient: &Ambient,
    attachments: &Attachments,
    recipe: &[RecipePart],
) -> Result<Vec<ContextMessage>, String> {
    let mut messages = Vec::new();
    for part in recipe {
        match part {
            RecipePart::System { hash } => {
                if hash != system.hash {
                    return Err("the system prompt changed since this plan was made".to_string());
                }
                messages.push(message(Role::System, system.text));
            }
            RecipePart::Summary { effort, text } => {
                messages.push(message(
                    Role::System,
                    &crate::prompt::summary_line(effort, text),
                ));
            }
            RecipePart::Header { effort } => {
                let e = efforts
                    .get(effort)
                    .ok_or_else(|| format!("effort '{effort}' is not stored"))?;
                messages.push(message(Role::System, &e.header));
            }
            RecipePart::Messages { log, seqs } => {
                replay_messages(efforts, ambient, log, seqs, &mut messages)?;
            }
            RecipePart::Pending { text } => messages.push(message(Role::User, text)),
            RecipePart::Attachment { id, mode } => {
                let stored = attachments
                    .by_id()
                    .get(id)
                    .ok_or_else(|| format!("attachment '{id}' is not stored"))?;
                messages.push(message(
                    Role::User,
                    &stored.attachment.context_text_for(*mode),
                ));
            }
            RecipePart::Rolling { text } => messages.push(message(Role::System, text)),
            RecipePart::Recalled {
                header,
                log,
                attachment,
                keys,
            } => {
                messages.push(message(Role::System, header));
                if let Some(id) = attachment {
                    let stored = attachments
                        .by_id()
                        .get(id)
                        .ok_or_else(|| format!("attachment '{id}' is not stored"))?;
                    let text = &stored.attachment.full_text;
                    let ranges = crate::recall::passages(text);
                    let first = id
                        .strip_prefix("att-")
                        .and_then(|n| n.parse().ok())
                        .and_then(|n| attachments.first_part(n))
                        .map_or(1, u64::from);
                    for &part in keys {
                        let range = part
                            .checked_sub(first)
                            .and_then(|p| usize::try_from(p).ok())
                            .and_then(|p| ranges.get(p))
                            .ok_or_else(|| {
                                format!("passage {part} of attachment '{id}' is not stored")
                            })?;
                        messages.push(message(Role::User, &text[range.clone()]));
                    }
                } else if let Some(log) = log {
                    replay_messages(efforts, ambient, log, keys, &mut messages)?;
                }
            }
        }
    }
    Ok(messages)
}

/// Appends the stored messages `seqs` of one log, read from the loaded logs.
fn replay_messages(
    efforts: &Efforts,
    ambient: &Ambient,
    log: &LogRef,
    seqs: &[u64],
    messages: &mut Vec<ContextMessage>,
) -> Result<(), String> {
    let stored: &[Message] = match log {
        LogRef::Ambient => ambient.messages(),
        LogRef::Effort(id) => {
            &efforts
                .get(id)
                .ok_or_else(|| format!("effort '{id}' is not stored"))?
                .messages
        }
    };
    for seq in seqs {
        let position = stored
            .binary_search_by_key(seq, |m| m.seq)
            .map_err(|_| format!("message {seq} is not loaded"))?;
        let m = &stored[position];
        messages.push(message(m.role, &m.content));
    }
    Ok(())
}

/// `1234` → `1.2k`, `999` → `999`.
pub(super) fn compact_tokens(tokens: u64) -> String {
    if tokens >= 1000 {
        format!("{:.1}k", tokens as f64 / 1000.0)
    } else {
        tokens.to_string()
    }
}

pub(super) fn meter_line(meter: &BudgetMeter) -> String {
    format!(
        "CTX {} · {} auto item{} · +{} tokens · {}% of budget",
        meter.mode.label(),
        meter.auto_items,
        if meter.auto_items == 1 { "" } else { "s" },
        compact_tokens(meter.auto_tokens),
        meter.percent_of_budget.round() as u64
    )
}

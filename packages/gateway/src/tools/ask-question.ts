/**
 * `ask_question`: the model asks the user one to three multiple-choice questions in one
 * call, and the turn waits for the answers the way it waits on an approval. Each question
 * has a short header, a one-sentence question and two to four mutually exclusive options;
 * the schema checks the shape, `checkQuestions` what a schema cannot (one sentence,
 * distinct options). The chosen options come back to the model as the tool result.
 */
import type { TurnQuestionOption } from "@turnspec/protocol/types";
import type { QuestionAsk, QuestionOutcome, Questions } from "../flows/questions.js";
import { defineTool, type ArgumentsOf } from "./arguments.js";

/** Longest header: it has to fit a chat surface's button-row heading. */
export const MAX_HEADER_CHARS = 40;
/** Longest question and option label. */
const MAX_QUESTION_CHARS = 300;
const MAX_LABEL_CHARS = 80;

/** The ids options get, in order: the model gives labels, the gateway the ids the answer names. */
const OPTION_IDS = ["a", "b", "c", "d"] as const;

/** The arguments of an ask_question call, as the model sees them. */
const PARAMETERS = {
  type: "object",
  additionalProperties: false,
  required: ["questions"],
  properties: {
    questions: {
      type: "array",
      minItems: 1,
      maxItems: 3,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["header", "question", "options"],
        properties: {
          header: { type: "string", minLength: 1, maxLength: MAX_HEADER_CHARS, description: "A short label for the question." },
          question: { type: "string", minLength: 1, maxLength: MAX_QUESTION_CHARS, description: "The question, in one sentence." },
          options: {
            type: "array",
            minItems: 2,
            maxItems: 4,
            items: {
              type: "object",
              additionalProperties: false,
              required: ["label"],
              properties: {
                label: { type: "string", minLength: 1, maxLength: MAX_LABEL_CHARS, description: "What the user picks." },
                description: { type: "string", description: "What picking it means." },
              },
            },
          },
        },
      },
    },
  },
} as const;

export function askQuestionTool(questions: Pick<Questions, "ask">) {
  return defineTool({
    spec: {
      name: "ask_question",
      description:
        "Ask the user one to three multiple-choice questions and wait for the answers, which come back as this call's result. Each question has a short header, one sentence, and two to four mutually exclusive options.",
      parameters: PARAMETERS,
    },
    itemType: "dynamicToolCall",
    asksUser: true,
    describe: () => ({}),
    async run(args, ctx) {
      const turn = ctx.turn;
      if (!turn || !ctx.callId)
        return { ok: false, content: "ask_question can only run inside a turn", item: { error: { message: "no turn" } } };
      const asks = toAsks(args);
      const problem = checkQuestions(asks);
      if (problem) return { ok: false, content: `arguments for ask_question: ${problem}`, item: { error: { message: problem } } };
      const outcomes = await questions.ask(turn.thread_id, turn.turn_id, ctx.callId, JSON.stringify(args), asks, ctx.signal);
      if (ctx.signal.aborted) return { ok: false, content: "the turn was cancelled before the questions were answered", item: {} };
      return { ok: true, content: answerText(asks, outcomes), item: {} };
    },
  });
}

function toAsks(args: ArgumentsOf<typeof PARAMETERS>): QuestionAsk[] {
  return args.questions.map((q) => ({
    header: q.header.trim(),
    question: q.question.trim(),
    options: q.options.map((o, i): TurnQuestionOption => ({
      id: OPTION_IDS[i]!,
      label: o.label.trim(),
      ...(o.description ? { description: o.description } : {}),
    })),
  }));
}

/** What the schema cannot say: one sentence per question, options that differ. Undefined when the call is fine. */
export function checkQuestions(asks: readonly QuestionAsk[]): string | undefined {
  for (const [i, ask] of asks.entries()) {
    const at = `questions[${i}]`;
    if (ask.header === "") return `${at}.header is blank`;
    if (ask.question === "") return `${at}.question is blank`;
    // A sentence end followed by more text: two sentences, or more.
    if (/[.!?](\s+)\S/.test(ask.question)) return `${at}.question must be one sentence, got ${JSON.stringify(ask.question)}`;
    const labels = new Map<string, number>();
    for (const [j, option] of ask.options.entries()) {
      if (option.label === "") return `${at}.options[${j}].label is blank`;
      const key = option.label.toLowerCase();
      const earlier = labels.get(key);
      if (earlier !== undefined)
        return `${at}.options[${j}] repeats options[${earlier}] (${JSON.stringify(option.label)}); options must be mutually exclusive`;
      labels.set(key, j);
    }
  }
  return undefined;
}

/** The tool result: each question's header and the chosen option, or why it has none. */
function answerText(asks: readonly QuestionAsk[], outcomes: readonly QuestionOutcome[]): string {
  return asks
    .map((ask, i) => {
      const outcome = outcomes[i]!;
      const answer = outcome.option
        ? `the user chose "${outcome.option.label}"`
        : outcome.resolution === "expired"
          ? "no answer: the question expired"
          : "no answer: the question was cancelled";
      return `${ask.header}: ${answer}`;
    })
    .join("\n");
}

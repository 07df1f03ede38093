/**
 * The MiniMax-M3 chat template of the bundled tiny model (tokenizer_config.json `chat_template`),
 * written from shared/design/minimax-m3.md §4:
 *
 *   ]~!b[]~b]system\n{system or "You are a helpful assistant."}[e~[\n
 *   ]~b]developer\n# Tools ... <tools>\n<tool>{schema}</tool>\n</tools> ...[e~[\n   (tools only)
 *   ]~b]user\n{content}[e~[\n
 *   ]~b]ai\n</mm:think>{content}{tool-call block}[e~[\n     (past assistant turns, reasoning dropped)
 *   ]~b]tool\n<response>{result}</response>\n<response>...</response>[e~[\n   (consecutive tools merged)
 *   ]~b]ai\n   (+ `<mm:think>` when chat_template_kwargs.thinking_mode == "enabled")
 *
 * Tool calls use the namespace marker NS = `]<]minimax[>[`:
 *   NS<tool_call>\nNS<invoke name="f">NS<key>value NS</key>NS</invoke>\nNS</tool_call>
 * with nested objects as nested tags, arrays as repeated NS<item> tags, booleans as JSON.
 * Arguments must be objects here; a server should JSON-parse OpenAI's string arguments first.
 */
export const M3_CHAT_TEMPLATE = [
  '{%- macro text(c) -%}',
  '{%- if c is string -%}{{ c }}',
  '{%- elif c is iterable -%}{%- for p in c -%}{%- if p.type == "text" -%}{{ p.text }}{%- endif -%}{%- endfor -%}',
  '{%- endif -%}',
  '{%- endmacro -%}',
  '{%- macro to_xml(v) -%}',
  '{%- if v is mapping -%}{%- for k, x in v.items() -%}{%- if x is not none -%}',
  ']<]minimax[>[<{{ k }}>{{ to_xml(x) }}]<]minimax[>[</{{ k }}>',
  '{%- endif -%}{%- endfor -%}',
  '{%- elif v is string -%}{{ v }}',
  '{%- elif v is boolean -%}{{ v | tojson }}',
  '{%- elif v is iterable -%}{%- for x in v -%}]<]minimax[>[<item>{{ to_xml(x) }}]<]minimax[>[</item>{%- endfor -%}',
  '{%- elif v is not none -%}{{ v }}',
  '{%- endif -%}',
  '{%- endmacro -%}',
  '{%- macro calls(tcs) -%}',
  ']<]minimax[>[<tool_call>{{ "\\n" }}',
  '{%- for tc in tcs -%}',
  '{%- set fn = tc.function if tc.function is defined else tc -%}',
  ']<]minimax[>[<invoke name="{{ fn.name }}">',
  '{%- if fn.arguments is mapping -%}{{ to_xml(fn.arguments) }}',
  '{%- elif fn.arguments is string -%}{{ fn.arguments }}{%- endif -%}',
  ']<]minimax[>[</invoke>{{ "\\n" }}',
  '{%- endfor -%}',
  ']<]minimax[>[</tool_call>',
  '{%- endmacro -%}',
  ']~!b[]~b]system{{ "\\n" }}',
  '{%- if messages and messages[0].role == "system" -%}{{ text(messages[0].content) }}',
  '{%- else -%}You are a helpful assistant.{%- endif -%}',
  '[e~[{{ "\\n" }}',
  '{%- if tools -%}',
  ']~b]developer{{ "\\n" }}# Tools{{ "\\n" }}',
  'You may call one or more tools to assist with the user query.{{ "\\n" }}',
  'Here are the tools available in JSONSchema format:{{ "\\n\\n" }}<tools>{{ "\\n" }}',
  '{%- for t in tools -%}',
  '<tool>{{ (t.function if t.function is defined else t) | tojson }}</tool>{{ "\\n" }}',
  '{%- endfor -%}',
  '</tools>{{ "\\n\\n" }}To call tools, wrap all invocations in a single ',
  ']<]minimax[>[<tool_call>]<]minimax[>[</tool_call> block.[e~[{{ "\\n" }}',
  '{%- endif -%}',
  '{%- for m in messages -%}',
  '{%- if m.role == "system" -%}',
  '{%- if not loop.first -%}]~b]developer{{ "\\n" }}{{ text(m.content) }}[e~[{{ "\\n" }}{%- endif -%}',
  '{%- elif m.role == "user" -%}',
  ']~b]user{{ "\\n" }}{{ text(m.content) }}[e~[{{ "\\n" }}',
  '{%- elif m.role == "assistant" -%}',
  ']~b]ai{{ "\\n" }}</mm:think>{{ text(m.content) }}',
  '{%- if m.tool_calls -%}{{ calls(m.tool_calls) }}{%- endif -%}',
  '[e~[{{ "\\n" }}',
  '{%- elif m.role == "tool" -%}',
  '{%- if loop.first or messages[loop.index0 - 1].role != "tool" -%}]~b]tool{{ "\\n" }}{%- endif -%}',
  '<response>{{ text(m.content) }}</response>',
  '{%- if loop.last or messages[loop.index0 + 1].role != "tool" -%}[e~[{{ "\\n" }}',
  '{%- else -%}{{ "\\n" }}{%- endif -%}',
  '{%- endif -%}',
  '{%- endfor -%}',
  '{%- if add_generation_prompt -%}]~b]ai{{ "\\n" }}',
  '{%- if thinking_mode is defined and thinking_mode == "enabled" -%}<mm:think>{%- endif -%}',
  '{%- endif -%}',
].join('');

"""Chat templates of the tiny model, one per tool-call family, written in this project.

Each family is a chat template modelled on a real family's (its turns, tool-result role and
tool-call convention), its marker tokens, and the end-of-turn token generation stops at. The tiny
model builder (`tiny_model.build_tiny_model(..., family=...)`) writes the template into
`tokenizer_config.json`, adds the markers to the tokenizer as single tokens and makes the
end-of-turn token the model's eos; `constrained.detect_convention` reads the convention back from
the template (each family's name is its convention's name there):

- `hermes` (the default; Qwen2.5, Hermes): ChatML turns, tools in the system turn, a call as
  `<tool_call>\\n{"name": "f", "arguments": {...}}\\n</tool_call>`, results in a user turn inside
  `<tool_response>` tags; the turn ends with `<|im_end|>`.
- `qwen3_coder` (Qwen3-Coder): ChatML as hermes, a call as `<tool_call>\\n<function=f>\\n
  <parameter=k>\\nvalue\\n</parameter>\\n</function>\\n</tool_call>`, strings written raw, other
  values as JSON. `arguments` given as a JSON string (OpenAI's form, our records' default) is read
  by the template itself (Jinja has no JSON parser, so the template scans the text).
- `llama3_json` (Llama 3.1 / 3.2 JSON tool calling): `<|start_header_id|>role<|end_header_id|>`
  turns after `<|begin_of_text|>`, tools and the call format in the system turn, a call as the
  assistant turn `{"name": "f", "parameters": {...}}`, results in an `ipython` turn; the turn ends
  with `<|eot_id|>`. The generation prompt ends in `<|end_header_id|>\n\n`: the tokenizers' split
  (below) keeps a run of newlines one piece whatever follows, so it is a token prefix of the prompt
  with the answer.
- `mistral` (Mistral v7 style, e.g. Mistral Small 3): `<s>`, `[SYSTEM_PROMPT]...[/SYSTEM_PROMPT]`,
  `[AVAILABLE_TOOLS]...[/AVAILABLE_TOOLS]` before the last user turn `[INST]...[/INST]`, a call as
  `[TOOL_CALLS][{"name": "f", "arguments": {...}}]`, results as `[TOOL_RESULTS]...[/TOOL_RESULTS]`;
  the assistant turn ends with `</s>`, and there is no generation prompt (the answer follows `[/INST]`
  or `[/TOOL_RESULTS]`).

All four list each tool as a one-line signature, `read_file(file_path, limit, offset)`, not its
JSON schema, to keep prompts short on the CPU. A call in an assistant turn's `tool_calls` takes
`arguments` as a JSON string (written as is) or an object (written with tojson; qwen3_coder
writes either as its parameters, an object's in name order as the constrained grammar wants
them), and is written without its id, as the constrained grammar writes a call.

Tokens: `special_tokens` are the turn structure (decoding with skip_special_tokens drops them);
`tag_tokens` are the call markers an answer holds, added as single but ordinary tokens so such
decoding keeps them, as in Qwen2.5. llguidance takes an added token as one token (a grammar asks
for the token, not its spelling) when it is special or shaped `<...>`, so Mistral's
`[TOOL_CALLS]` is special, as in Mistral's own tokenizers (mlx-lm and `tokenizer.decode` keep
special tokens). Every family's text is split as transformers splits it when it loads the tiny
model's tokenizer: `model_type: qwen2` makes it a Qwen2Tokenizer, whose own split and NFC
normalization replace whatever tokenizer.json says (`tiny_model.train_tokenizer`).
"""

from __future__ import annotations

from dataclasses import dataclass

HERMES, QWEN3_CODER, LLAMA3_JSON, MISTRAL = "hermes", "qwen3_coder", "llama3_json", "mistral"

ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = (ENDOFTEXT, IM_START, IM_END)
# Single tokens, as in Qwen2.5, but not special: decoding keeps them.
TAG_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")

# A tool as its one-line signature, `name(p1, p2)`: a Jinja statement list shared by the templates
# (one line per tool after `'\n'`).
_SIGNATURE = r"""{%- set fn = tool.function if tool.function is defined else tool %}
{{- fn.name + '(' }}
{%- if fn.parameters is defined and fn.parameters.properties is defined %}
{{- fn.parameters.properties | list | join(', ') }}
{%- endif %}
{{- ')' }}"""

# ChatML as Qwen2.5 writes it, without its default system prompt. `arguments` may be a JSON string
# (OpenAI's form, written as is) or an object (written with tojson). Unlike Qwen2.5, each tool is a
# one-line signature, `read_file(file_path, limit, offset)`, not its JSON schema: on the CPU the
# schemas of the whole vocabulary would be most of every record's tokens (about 900 of 1,500).
CHAT_TEMPLATE = r"""{%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\n\n' }}{%- endif %}
{{- '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n'
    ~ 'You are provided with function signatures within <tools></tools> XML tags:\n<tools>' }}
{%- for tool in tools %}
{%- set fn = tool.function if tool.function is defined else tool %}
{{- '\n' + fn.name + '(' }}
{%- if fn.parameters is defined and fn.parameters.properties is defined %}
{{- fn.parameters.properties | list | join(', ') }}
{%- endif %}
{{- ')' }}
{%- endfor %}
{{- '\n</tools>\n\nFor each function call, return a json object with function name and arguments '
    ~ 'within <tool_call></tool_call> XML tags:\n<tool_call>\n'
    ~ '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' and message.tool_calls %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\n<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' }}
{%- if tool_call.arguments is string %}{{- tool_call.arguments }}
{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
{{- '}\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\n<tool_response>\n' + (message.content or '') + '\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}
{%- else %}
{{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""

# The template's own prose, trained on too so the tokenizer has tokens for what every prompt holds.
TEMPLATE_TEXTS = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
    '"arguments": <args-json-object>}\n</tool_call>',
    "system\nuser\nassistant\n<tool_response>\n</tool_response>",
)

# Qwen3-Coder's XML parameters of one call. An object's members are written in their order; a JSON
# string (OpenAI's `arguments`) is scanned character by character: keys and string values are
# decoded (escapes, \uXXXX and surrogate pairs included), other values keep their JSON text.
_XML_PARAMETERS = r"""{%- macro xml_parameters(arguments) %}
{%- if arguments is mapping %}
{%- for key, value in arguments | dictsort(true) %}
{{- '<parameter=' + key + '>\n' }}
{%- if value is string %}{{- value }}{%- else %}{{- value | tojson }}{%- endif %}
{{- '\n</parameter>\n' }}
{%- endfor %}
{%- elif arguments is string %}
{%- set unescape = {'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'} %}
{%- set ns = namespace(depth=0, mode='key', text=false, quoted=false, escape=false, hex='', hexleft=0,
                       high=0, name='', value='') %}
{%- for ch in arguments %}
{%- if ns.quoted %}
{%- set ns.value = ns.value + ch %}
{%- if ns.escape %}{%- set ns.escape = false %}
{%- elif ch == '\\' %}{%- set ns.escape = true %}
{%- elif ch == '"' %}{%- set ns.quoted = false %}
{%- endif %}
{%- elif ns.text %}
{%- set piece = '' %}
{%- if ns.hexleft > 0 %}
{%- set ns.hex = ns.hex + ch %}
{%- set ns.hexleft = ns.hexleft - 1 %}
{%- if ns.hexleft == 0 %}
{%- set code = ns.hex | int(base=16) %}
{%- if code >= 55296 and code < 56320 %}{%- set ns.high = code %}
{%- elif code >= 56320 and code < 57344 and ns.high %}
{%- set piece = '%c' % (65536 + (ns.high - 55296) * 1024 + code - 56320) %}
{%- set ns.high = 0 %}
{%- else %}{%- set piece = '%c' % code %}
{%- endif %}
{%- endif %}
{%- elif ns.escape %}
{%- set ns.escape = false %}
{%- if ch == 'u' %}{%- set ns.hex = '' %}{%- set ns.hexleft = 4 %}
{%- else %}{%- set piece = unescape[ch] if ch in unescape else ch %}
{%- endif %}
{%- elif ch == '\\' %}{%- set ns.escape = true %}
{%- elif ch == '"' %}
{%- set ns.text = false %}
{%- set ns.mode = 'colon' if ns.mode == 'key' else 'end' %}
{%- else %}{%- set piece = ch %}
{%- endif %}
{%- if ns.mode == 'key' %}{%- set ns.name = ns.name + piece %}
{%- else %}{%- set ns.value = ns.value + piece %}{%- endif %}
{%- elif ns.depth == 0 %}
{%- if ch == '{' %}{%- set ns.depth = 1 %}{%- set ns.mode = 'key' %}{%- endif %}
{%- elif ns.mode == 'raw' and not (ns.depth == 1 and (ch == ',' or ch == '}')) %}
{%- set ns.value = ns.value + ch %}
{%- if ch == '"' %}{%- set ns.quoted = true %}
{%- elif ch == '{' or ch == '[' %}{%- set ns.depth = ns.depth + 1 %}
{%- elif ch == '}' or ch == ']' %}{%- set ns.depth = ns.depth - 1 %}
{%- endif %}
{%- elif ch == ',' or ch == '}' %}
{%- if ns.mode == 'end' or ns.mode == 'raw' %}
{{- '<parameter=' + ns.name + '>\n' + (ns.value | trim if ns.mode == 'raw' else ns.value)
    + '\n</parameter>\n' }}
{%- endif %}
{%- set ns.mode = 'key' %}{%- set ns.name = '' %}{%- set ns.value = '' %}
{%- if ch == '}' %}{%- set ns.depth = 0 %}{%- endif %}
{%- elif ch == '"' %}{%- set ns.text = true %}
{%- elif ch == ':' %}{%- set ns.mode = 'value' %}
{%- elif ns.mode == 'value' and ch not in ' \t\n\r' %}
{%- set ns.mode = 'raw' %}{%- set ns.value = ch %}
{%- if ch == '{' or ch == '[' %}{%- set ns.depth = ns.depth + 1 %}{%- endif %}
{%- endif %}
{%- endfor %}
{%- endif %}
{%- endmacro %}
"""

# Qwen3-Coder's template, trimmed as CHAT_TEMPLATE is (no default system prompt, signatures).
QWEN3_CODER_TEMPLATE = (
    _XML_PARAMETERS
    + r"""{%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\n\n' }}{%- endif %}
{{- '# Tools\n\nYou have access to the following functions:\n\n<tools>' }}
{%- for tool in tools %}
{{- '\n' }}
"""
    + _SIGNATURE
    + r"""
{%- endfor %}
{{- '\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n'
    ~ '<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n'
    ~ '</parameter>\n</function>\n</tool_call><|im_end|>\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' and message.tool_calls %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\n' + message.content | trim + '\n' }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\n<tool_call>\n<function=' + tool_call.name + '>\n' }}
{{- xml_parameters(tool_call.arguments) }}
{{- '</function>\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user\n' }}{%- endif %}
{{- '<tool_response>\n' + (message.content or '') + '\n</tool_response>\n' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}
{%- else %}
{{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""
)

QWEN3_CODER_TEXTS = (
    "# Tools\n\nYou have access to the following functions:\n\n<tools>\n</tools>\n\n"
    "If you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n</function>\n</tool_call>",
    "system\nuser\nassistant\n<tool_response>\n</tool_response>\n",
    "<function=read_file>\n<parameter=file_path>\n</parameter>\n</function>\n",
)

BEGIN_OF_TEXT, END_OF_TEXT = "<|begin_of_text|>", "<|end_of_text|>"
START_HEADER, END_HEADER, EOT = "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"

# Llama 3.1's template with tools in the system turn (its `tools_in_user_message=false`), without
# the knowledge and today dates. As in Llama 3.1, a turn with tool calls holds only the calls.
LLAMA3_JSON_TEMPLATE = (
    r"""{{- bos_token }}
{%- if messages[0].role == 'system' %}
{%- set system_message = messages[0].content | trim %}
{%- set loop_messages = messages[1:] %}
{%- else %}
{%- set system_message = '' %}
{%- set loop_messages = messages %}
{%- endif %}
{{- '<|start_header_id|>system<|end_header_id|>\n\n' }}
{%- if tools %}
{{- 'Environment: ipython\n\n'
    ~ 'You have access to the following functions. To call a function, please respond with JSON '
    ~ 'for a function call. Respond in the format {"name": function name, "parameters": dictionary '
    ~ 'of argument name and its value}. Do not use variables.\n' }}
{%- for tool in tools %}
{{- '\n' }}
"""
    + _SIGNATURE
    + r"""
{%- endfor %}
{{- '\n\n' }}
{%- endif %}
{{- system_message + '<|eot_id|>' }}
{%- for message in loop_messages %}
{%- if message.role == 'assistant' and message.tool_calls %}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{%- if not loop.first %}{{- '\n' }}{%- endif %}
{{- '{"name": "' + tool_call.name + '", "parameters": ' }}
{%- if tool_call.arguments is string %}{{- tool_call.arguments }}
{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
{{- '}' }}
{%- endfor %}
{{- '<|eot_id|>' }}
{%- elif message.role == 'tool' or message.role == 'ipython' %}
{{- '<|start_header_id|>ipython<|end_header_id|>\n\n' }}
{%- if message.content is mapping %}{{- message.content | tojson }}
{%- else %}{{- message.content or '' }}{%- endif %}
{{- '<|eot_id|>' }}
{%- else %}
{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + (message.content or '') | trim
    + '<|eot_id|>' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}"""
)

LLAMA3_JSON_TEXTS = (
    "Environment: ipython\n\nYou have access to the following functions. To call a function, please "
    'respond with JSON for a function call. Respond in the format {"name": function name, '
    '"parameters": dictionary of argument name and its value}. Do not use variables.\n',
    "system\n\nuser\n\nassistant\n\nipython\n\n",
    '{"name": "read_file", "parameters": {}}',
)

BOS, EOS, PAD, TOOL_CALLS = "<s>", "</s>", "<pad>", "[TOOL_CALLS]"

# Mistral's v7 template (Mistral Small 3), tools as signatures, calls without ids.
MISTRAL_TEMPLATE = (
    r"""{{- bos_token }}
{%- set ns = namespace(last_user=-1) %}
{%- for message in messages %}
{%- if message.role == 'user' %}{%- set ns.last_user = loop.index0 %}{%- endif %}
{%- endfor %}
{%- for message in messages %}
{%- if message.role == 'system' %}
{{- '[SYSTEM_PROMPT]' + message.content + '[/SYSTEM_PROMPT]' }}
{%- elif message.role == 'user' %}
{%- if tools and loop.index0 == ns.last_user %}
{{- '[AVAILABLE_TOOLS]' }}
{%- for tool in tools %}
{%- if not loop.first %}{{- '\n' }}{%- endif %}
"""
    + _SIGNATURE
    + r"""
{%- endfor %}
{{- '[/AVAILABLE_TOOLS]' }}
{%- endif %}
{{- '[INST]' + (message.content or '') + '[/INST]' }}
{%- elif message.role == 'assistant' %}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- if message.tool_calls %}
{{- '[TOOL_CALLS][' }}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{%- if not loop.first %}{{- ', ' }}{%- endif %}
{{- '{"name": "' + tool_call.name + '", "arguments": ' }}
{%- if tool_call.arguments is string %}{{- tool_call.arguments }}
{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
{{- '}' }}
{%- endfor %}
{{- ']' }}
{%- endif %}
{{- eos_token }}
{%- elif message.role == 'tool' %}
{{- '[TOOL_RESULTS]' + (message.content or '') + '[/TOOL_RESULTS]' }}
{%- endif %}
{%- endfor %}"""
)

MISTRAL_SPECIAL_TOKENS = (
    *(BOS, EOS, PAD, "[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", TOOL_CALLS),
    *("[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"),
)
MISTRAL_TEXTS = ('[{"name": "read_file", "arguments": {}}]',)


@dataclass(frozen=True)
class ChatFamily:
    """A tool-call family's chat template and tokens (see the module doc)."""

    name: str  # also its convention's name in constrained.CONVENTIONS
    chat_template: str
    bos: str  # bos_token; config.json bos_token_id
    eos: str  # the end-of-turn token: eos_token and config.json eos_token_id, where generation stops
    pad: str
    special_tokens: tuple[str, ...]  # the turn structure, in id order (bos, eos and pad among them)
    tag_tokens: tuple[str, ...]  # call markers: single tokens that decoding keeps
    template_texts: tuple[str, ...]  # the template's prose, for the tokenizer to learn

    @property
    def added_tokens(self) -> tuple[str, ...]:
        return (*self.special_tokens, *self.tag_tokens)


FAMILIES: dict[str, ChatFamily] = {
    HERMES: ChatFamily(
        HERMES, CHAT_TEMPLATE, ENDOFTEXT, IM_END, ENDOFTEXT, SPECIAL_TOKENS, TAG_TOKENS, TEMPLATE_TEXTS
    ),
    QWEN3_CODER: ChatFamily(
        QWEN3_CODER,
        QWEN3_CODER_TEMPLATE,
        ENDOFTEXT,
        IM_END,
        ENDOFTEXT,
        SPECIAL_TOKENS,
        TAG_TOKENS,
        QWEN3_CODER_TEXTS,
    ),
    LLAMA3_JSON: ChatFamily(
        LLAMA3_JSON,
        LLAMA3_JSON_TEMPLATE,
        BEGIN_OF_TEXT,
        EOT,
        END_OF_TEXT,
        (BEGIN_OF_TEXT, END_OF_TEXT, START_HEADER, END_HEADER, EOT),
        (),
        LLAMA3_JSON_TEXTS,
    ),
    MISTRAL: ChatFamily(
        MISTRAL,
        MISTRAL_TEMPLATE,
        BOS,
        EOS,
        PAD,
        MISTRAL_SPECIAL_TOKENS,
        (),
        MISTRAL_TEXTS,
    ),
}


def chat_family(name: str) -> ChatFamily:
    """The family called `name`; ValueError naming the others otherwise."""
    if name not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {name!r}")
    return FAMILIES[name]

"""Export a readable PyTorch GPT-2 to ONNX for the interactive textbook's in-browser demos.

Modules, in the order a build uses them:
    weights   load a Hugging Face GPT-2 from a preset, a local directory or the Hub
    hub       is a Hub model cached or reachable (standard library only, for ``make serve``)
    gpt2      the readable GPT-2 (``GPT2``, ``GPT2Config``) with explicit key/value cache tensors
    export    ``torch.onnx.export`` (dynamo) of the fp32 reference graph
    quantize  the fp16, q8 and q4 variants
    package   external-data pieces and ``manifest.json``
    runtime   ONNX Runtime and PyTorch behind one NumPy interface; greedy decoding
    validate  the numeric checks and their table
    measure   decoding speed, and the cost of the attention and hidden-state outputs
    report    ``report.json`` and ``report.md``
    tokenizer copy GPT-2's ``vocab.json`` / ``merges.txt`` with OpenAI's notice
    pipeline  the stages, each reading and writing one build directory
    cli       ``model-export all | build | quantize | validate | package | report``
"""

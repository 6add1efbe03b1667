"""Export a readable PyTorch GPT-2 to ONNX for the interactive textbook's in-browser demos.

Modules, in the order a build uses them:
    weights   load a Hugging Face GPT-2 from a preset, a local directory or the Hub
    gpt2      the readable GPT-2 (``GPT2``, ``GPT2Config``) with explicit key/value cache tensors
    export    ``torch.onnx.export`` (dynamo) into one ``model.onnx``
    runtime   ONNX Runtime and PyTorch behind one NumPy interface; greedy decoding
    validate  the numeric checks and their table
    tokenizer copy GPT-2's ``vocab.json`` / ``merges.txt`` with OpenAI's notice
    package   ``manifest.json``
    cli       ``model-export build`` / ``model-export validate``
"""

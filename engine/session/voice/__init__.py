"""Voice: spoken-form checks on any run, and audio sessions (protocol version 2).

- :mod:`engine.session.voice.spoken`: checks of what an agent says against a domain's spoken-form rules
  (codes spelled out, internal ids never read aloud, no tool-call text in speech), for text runs
  and voice runs alike; a domain exposes them as plugin diagnostics.
- :mod:`engine.session.voice.frames`, :mod:`engine.session.voice.pcm`: the binary audio frame and PCM helpers.
- :mod:`engine.session.voice.tts`, :mod:`engine.session.voice.asr`: local speech synthesis (OS packages)
  and an
  optional speech-recognition interface (never downloads anything).
- :mod:`engine.session.voice.link`, :mod:`engine.session.voice.timeline`: the engine's end of an audio
  session and
  the media timeline it records; :mod:`engine.session.voice.metrics`: latency, time to first audio,
  overlap, WER.
- :mod:`engine.session.voice.side`: the built-in voice agent side (a side server of ``engine.session.sides``
  speaking version 2); :mod:`engine.session.voice.run`: what ``evalctl run --voice`` adds to a run, and
  the WAVs and ``voice.json`` of each session.

``engine.session.voice`` builds on ``engine.session.sides`` (links, side servers), never the reverse.
"""

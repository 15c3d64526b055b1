from gclsampler.cli import console

console()

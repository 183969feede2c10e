"""`gpudr drill`: run a DR drill through the Pulumi Automation API and the clouds' SDKs.

The pure part (names, config, stages, targets, cost) is `gpudr.build.drill`, its report
`gpudr.docs.drillreport`; the program's drill components are `components/*/drill.py`. This
package holds what talks to the outside: the stack interface (`stacks`), the cloud checks
through each cloud's SDK (`probes`), checksum verification (`verify`, `checksums`), who runs the
drill (`operator`), the run itself (`orchestrate`), signals and a console that outlives its
terminal (`interrupts`, `console`) and the offline dry run (`dryrun`).
"""

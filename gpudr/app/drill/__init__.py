"""`gpudr drill`: run a DR drill through the Pulumi Automation API and the clouds' CLIs.

The pure part (names, config, stages, targets, cost) is `gpudr.build.drill`, its report
`gpudr.docs.drillreport`; the program's drill components are `components/*/drill.py`. This
package holds what talks to the outside: the stack interface (`stacks`), the cloud CLI checks
(`probes`), the run itself (`orchestrate`), signal handling (`interrupts`) and the offline dry
run (`dryrun`).
"""

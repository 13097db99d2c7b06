! Example: the 2-D heat stencil of examples/heat protected from Fortran through pmlab's
! module (pmlab.f90: ISO_C_BINDING interfaces and Fortran wrappers), checked bit for bit
! against the same loop unprotected.
!
!   fortran_heat POOL [N STEPS BS]   (threads: OMP_NUM_THREADS; PMLAB_LOOP_KILL_AT=K kills at K)
!
! The grid is row-major as in the C++ and C examples: element (i, j), 0-based, is g(j, i) here,
! so region k (rows 1 + k*bs ...) is one contiguous chunk of each array.
module heat_state
  use, intrinsic :: iso_c_binding
  use pmlab
  implicit none
  real(c_double), parameter :: alpha = 0.1_c_double
  integer(c_int64_t) :: n = 64, steps = 10, bs = 8
  real(c_double), pointer :: pa(:, :) => null(), pb(:, :) => null() ! [protection] [end]
contains

  subroutine init_grid(g)
    real(c_double), intent(out) :: g(0:n - 1, 0:n - 1)
    integer(c_int64_t) :: i, j
    do i = 0, n - 1
      do j = 0, n - 1
        g(j, i) = real(mod((i * n + j) * 2654435761_c_int64_t, 1000_c_int64_t), c_double)
      end do
    end do
  end subroutine init_grid

  ! Rows [i0, i1) (clipped to the interior) of step t: from g0 to g1 when t is even, else back.
  subroutine step(g0, g1, t, i0, i1)
    real(c_double), intent(inout) :: g0(0:n - 1, 0:n - 1), g1(0:n - 1, 0:n - 1)
    integer(c_int64_t), intent(in) :: t, i0, i1
    if (mod(t, 2_c_int64_t) == 0) then
      call sweep_rows(g0, g1, i0, min(i1, n - 1))
    else
      call sweep_rows(g1, g0, i0, min(i1, n - 1))
    end if
  end subroutine step

  subroutine sweep_rows(u, v, i0, i1)
    real(c_double), intent(in) :: u(0:n - 1, 0:n - 1)
    real(c_double), intent(inout) :: v(0:n - 1, 0:n - 1)
    integer(c_int64_t), intent(in) :: i0, i1
    integer(c_int64_t) :: i, j
    do i = i0, i1 - 1
      do j = 1, n - 2
        v(j, i) = u(j, i) + alpha * (u(j, i - 1) + u(j, i + 1) + u(j - 1, i) + u(j + 1, i) &
                                     - 4 * u(j, i))
      end do
    end do
  end subroutine sweep_rows

  ! [protection] what protecting the loop adds (to the end marker; check-examples counts it)
  integer(c_int) function band(user, t, k) bind(c)
    type(c_ptr), value :: user
    integer(c_int64_t), value :: t, k
    call step(pa, pb, t, 1 + k * bs, 1 + (k + 1) * bs)
    band = 0
  end function band
  ! [end]

end module heat_state

program fortran_heat
  use heat_state
  implicit none
  character(len=4096) :: path, arg
  real(c_double), allocatable, target :: g0(:, :), g1(:, :)
  integer(c_int64_t) :: t
  logical :: same
  type(pmlab_loop_t) :: loop ! [protection] [end]
  type(pmlab_report) :: r

  if (command_argument_count() /= 1 .and. command_argument_count() /= 4) then
    write (0, '(a)') 'usage: fortran_heat POOL [N STEPS BS]'
    error stop 2
  end if
  call get_command_argument(1, path)
  if (command_argument_count() == 4) then
    call get_command_argument(2, arg)
    read (arg, *) n
    call get_command_argument(3, arg)
    read (arg, *) steps
    call get_command_argument(4, arg)
    read (arg, *) bs
  end if
  if (n < 3 .or. steps < 1 .or. bs < 1 .or. bs > n - 2) then
    write (0, '(a)') 'fortran_heat: needs N >= 3, STEPS >= 1 and 1 <= BS <= N - 2'
    error stop 2
  end if
  allocate (g0(n, n), g1(n, n))
  call init_grid(g0)
  call init_grid(g1)

  ! [protection] The protected loop: describe, open (or create), run (or recover, resume).
  ! A wrapper without stat= stops the program with pmlab's message when it fails.
  call pmlab_input(loop, "a", g0)
  call pmlab_input(loop, "b", g1)
  call pmlab_layout(loop, steps, "b,a", n, n * n - n, bs * n)
  call pmlab_open(loop, path, [n, steps, bs], pa, pb)
  call pmlab_run(loop, c_funloc(band), r)
  ! [end]
  write (*, '(a,i0,a,i0,a,i0,a,i0,a)') 'fortran_heat n=', n, ' steps=', steps, ' bs=', bs, ': ', &
    pmlab_loop_regions(loop%handle), ' regions per step'
  if (r%already_done /= 0) write (*, '(a)') '  the pool holds a completed run (already complete)'
  if (r%resumed /= 0) write (*, '(a,i0,a,i0,a,i0,a,i0,a,i0)') '  recovered: ', &
    r%regions_validated, ' regions validated, ', r%regions_inconsistent, ' inconsistent, ', &
    r%regions_unwritten, ' never written, ', r%regions_recomputed, &
    ' recomputed; resumed at step ', r%resume_phase

  ! The unprotected loop, for the bit-for-bit comparison (transfer compares the bits).
  do t = 0, steps - 1
    call step(g0, g1, t, 1_c_int64_t, n - 1)
  end do
  if (mod(steps, 2_c_int64_t) == 0) then
    same = all(transfer(g0, 1_c_int64_t, size(g0)) == transfer(pa, 1_c_int64_t, size(pa)))
  else
    same = all(transfer(g1, 1_c_int64_t, size(g1)) == transfer(pb, 1_c_int64_t, size(pb)))
  end if
  call pmlab_free(loop) ! [protection] [end]
  if (same) then
    write (*, '(a)') '  verify: OK'
  else
    write (*, '(a)') '  verify: FAILED'
    error stop 1
  end if
end program fortran_heat
